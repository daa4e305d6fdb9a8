/// Bytes and numbers as hexadecimal text, in the forms Tether writes them: one place for the digits.
///
/// Lowercase, two digits a byte: the sync contract's checksums and byte values, health samples' raw bytes, image and
/// key hashes, a kept firmware image's name; replay transcripts separate the bytes with spaces. Four uppercase
/// digits: a 16-bit UUID's short form as BlueZ and the Bluetooth SIG's tables write it (2A35).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)
    private static let upperDigits = Array("0123456789ABCDEF".utf8)

    /// Two lowercase digits.
    public static func byte(_ byte: UInt8) -> String {
        String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }

    /// Two lowercase digits a byte, `separator` between bytes.
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        let separator = Array(separator.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * (2 + separator.count))
        for byte in bytes {
            if !out.isEmpty { out += separator }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Four uppercase digits, zero-padded: 0x2A35 is "2A35".
    public static func uppercase4(_ value: UInt16) -> String {
        String(decoding: [12, 8, 4, 0].map { upperDigits[Int(value >> $0 & 0x0F)] }, as: UTF8.self)
    }

    /// Bytes written as two hex digits each (either case), nothing between them; nil for anything else.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The value of one hex digit (either case), nil for anything else.
    public static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
