/// Test helpers: hex and C-string byte literals as the cited sources write them.
func hexBytes(_ hex: String) -> [UInt8] {
    let digits = hex.filter { !$0.isWhitespace }
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

func hexString(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

/// The bytes of a sequence of pieces, each hex (`0x…`) or ASCII text, as the C tests concatenate string literals.
func pieces(_ parts: String...) -> [UInt8] {
    parts.flatMap { $0.hasPrefix("0x") ? hexBytes(String($0.dropFirst(2))) : Array($0.utf8) }
}
