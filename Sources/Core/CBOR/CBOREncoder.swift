/// Encodes CBOR values in preferred serialization (RFC 8949 §4.2.1): every integer, length and tag argument in its
/// shortest form, every string and container with a definite length. Floats keep their width (`CBORValue.float`
/// chooses the shortest exact one).
extension CBORValue {
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        encode(into: &bytes)
        return bytes
    }

    public func encode(into bytes: inout [UInt8]) {
        switch self {
        case .unsigned(let value): CBORHead.write(major: 0, argument: value, into: &bytes)
        case .negative(let value): CBORHead.write(major: 1, argument: value, into: &bytes)
        case .bytes(let value):
            CBORHead.write(major: 2, argument: UInt64(value.count), into: &bytes)
            bytes.append(contentsOf: value)
        case .text(let value):
            let utf8 = value.utf8
            CBORHead.write(major: 3, argument: UInt64(utf8.count), into: &bytes)
            bytes.append(contentsOf: utf8)
        case .array(let elements):
            CBORHead.write(major: 4, argument: UInt64(elements.count), into: &bytes)
            for element in elements { element.encode(into: &bytes) }
        case .map(let pairs):
            CBORHead.write(major: 5, argument: UInt64(pairs.count), into: &bytes)
            for pair in pairs {
                pair.key.encode(into: &bytes)
                pair.value.encode(into: &bytes)
            }
        case .tagged(let tag, let content):
            CBORHead.write(major: 6, argument: tag, into: &bytes)
            content.encode(into: &bytes)
        case .simple(let value):
            // §3.3: 0…23 in the initial byte, 32…255 after 0xf8 (24…31 never decode into `.simple`).
            if value < 24 { bytes.append(0xE0 | value) } else { bytes.append(contentsOf: [0xF8, value]) }
        case .bool(let value): bytes.append(value ? 0xF5 : 0xF4)
        case .null: bytes.append(0xF6)
        case .undefined: bytes.append(0xF7)
        case .float16(let bits): bytes.append(0xF9); CBORHead.appendBigEndian(UInt64(bits), width: 2, into: &bytes)
        case .float32(let bits): bytes.append(0xFA); CBORHead.appendBigEndian(UInt64(bits), width: 4, into: &bytes)
        case .float64(let bits): bytes.append(0xFB); CBORHead.appendBigEndian(bits, width: 8, into: &bytes)
        }
    }
}

/// The initial byte and argument of a data item (RFC 8949 §3), always in the shortest form (§4.2.1).
public enum CBORHead {
    /// How many bytes the head of an item with this argument takes: 1, 2, 3, 5 or 9.
    public static func size(argument: UInt64) -> Int {
        switch argument {
        case 0..<24: 1
        case 24...0xFF: 2
        case 0x100...0xFFFF: 3
        case 0x1_0000...0xFFFF_FFFF: 5
        default: 9
        }
    }

    public static func write(major: UInt8, argument: UInt64, into bytes: inout [UInt8]) {
        let type = major << 5
        switch size(argument: argument) {
        case 1: bytes.append(type | UInt8(argument))
        case 2: bytes.append(type | 24); appendBigEndian(argument, width: 1, into: &bytes)
        case 3: bytes.append(type | 25); appendBigEndian(argument, width: 2, into: &bytes)
        case 5: bytes.append(type | 26); appendBigEndian(argument, width: 4, into: &bytes)
        default: bytes.append(type | 27); appendBigEndian(argument, width: 8, into: &bytes)
        }
    }

    static func appendBigEndian(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
        for index in stride(from: width - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
    }
}
