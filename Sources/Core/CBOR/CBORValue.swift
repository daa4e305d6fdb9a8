/// One CBOR data item (RFC 8949 §3) as a value: what it means, not how it was sent. A definite and an
/// indefinite-length string or container decode to the same value (§3.2.3: the chunks' concatenation is the
/// string), and the encoder writes every value in preferred serialization (§4.2.1).
///
/// Floating-point values keep their width and exact bits, so that every float on the wire (NaN payloads, -0.0,
/// half precision) decodes and encodes to the same bytes; `CBORValue.float(_:)` picks the shortest exact width.
public indirect enum CBORValue: Hashable, Sendable {
    /// Major type 0: 0…2⁶⁴−1.
    case unsigned(UInt64)
    /// Major type 1: the integer −1 − n, so −1…−2⁶⁴ (RFC 8949 §3.1).
    case negative(UInt64)
    /// Major type 2.
    case bytes([UInt8])
    /// Major type 3, valid UTF-8 (RFC 8949 §3.1: invalid UTF-8 is not valid CBOR; the decoder refuses it).
    case text(String)
    /// Major type 4.
    case array([CBORValue])
    /// Major type 5, its pairs in the order they were sent (duplicates are kept; lookups take the first).
    case map([CBORPair])
    /// Major type 6: a tag number and its content (RFC 8949 §3.4).
    case tagged(UInt64, CBORValue)
    /// Major type 7, simple values other than false, true, null and undefined (0…19 and 32…255, §3.3).
    case simple(UInt8)
    case bool(Bool)
    case null
    case undefined
    /// IEEE 754 binary16, binary32 and binary64 by their bits (major type 7, additional information 25, 26, 27).
    case float16(bits: UInt16)
    case float32(bits: UInt32)
    case float64(bits: UInt64)
}

/// One key/value pair of a CBOR map.
public struct CBORPair: Hashable, Sendable {
    public var key: CBORValue
    public var value: CBORValue

    public init(_ key: CBORValue, _ value: CBORValue) {
        self.key = key
        self.value = value
    }
}

extension CBORValue {
    /// An integer in the major type it belongs to (0 for non-negative, 1 for negative).
    public static func integer(_ value: Int64) -> CBORValue {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// A map with text keys, in the given order.
    public static func textMap(_ pairs: KeyValuePairs<String, CBORValue>) -> CBORValue {
        .map(pairs.map { CBORPair(.text($0.key), $0.value) })
    }

    /// The shortest float that represents `value` exactly (RFC 8949 §4.2.1: preferred serialization of floats;
    /// NaN as the half-precision quiet NaN 0x7e00, §4.2.2).
    public static func float(_ value: Double) -> CBORValue {
        if value.isNaN { return .float16(bits: 0x7E00) }
        if let half = HalfFloat.exactBits(of: value) { return .float16(bits: half) }
        let single = Float(value)
        if Double(single) == value { return .float32(bits: single.bitPattern) }
        return .float64(bits: value.bitPattern)
    }
}

// MARK: - Typed access (what SMP and other protocols read)

extension CBORValue {
    /// The value of the first pair whose key is the text `key`; nil when this is not a map or has no such key.
    /// Keys not asked for are simply never looked at (unknown keys are skipped).
    public subscript(key: String) -> CBORValue? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key == .text(key) }?.value
    }

    public var unsignedValue: UInt64? {
        if case .unsigned(let value) = self { return value }
        return nil
    }

    /// A major type 0 or 1 integer that fits Int64.
    public var integerValue: Int64? {
        switch self {
        case .unsigned(let value): return Int64(exactly: value)
        case .negative(let value): return Int64(exactly: value).map { -1 - $0 }
        default: return nil
        }
    }

    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var bytesValue: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var arrayValue: [CBORValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var mapValue: [CBORPair]? {
        if case .map(let value) = self { return value }
        return nil
    }

    /// Any of the three float widths as a Double (every binary16 and binary32 value is exact in binary64).
    public var doubleValue: Double? {
        switch self {
        case .float16(let bits): return HalfFloat.double(fromBits: bits)
        case .float32(let bits): return Double(Float(bitPattern: bits))
        case .float64(let bits): return Double(bitPattern: bits)
        default: return nil
        }
    }
}
