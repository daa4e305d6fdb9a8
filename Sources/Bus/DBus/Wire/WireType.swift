/// One complete D-Bus type parsed from a signature: what the wire reader and writer walk.
///
/// Spec, "Type System": a signature is a list of single complete types; `a` is followed by one complete type,
/// `(`…`)` holds one or more, `{`…`}` (only directly inside `a`) holds a basic key type and one complete value.
indirect enum WireType: Equatable, Sendable {
    /// A basic type by its type code (`y b n q i u x t d s o g h`).
    case basic(UInt8)
    case array(WireType)
    case dictionary(key: UInt8, value: WireType)
    case structure([WireType])
    case variant

    /// Spec, "Marshaling (Wire Format)": the alignment of each type on the wire.
    var alignment: Int {
        switch self {
        case .basic(let code): Self.basicAlignment(code)
        case .array: 4
        case .dictionary: 4
        case .structure: 8
        case .variant: 1
        }
    }

    /// The signature text of this type.
    var signature: String {
        switch self {
        case .basic(let code): String(UnicodeScalar(code))
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + String(UnicodeScalar(key)) + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    static func basicAlignment(_ code: UInt8) -> Int {
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "g"): 1
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"): 8
        default: 4  // b i u s o h
        }
    }

    static func isBasic(_ code: UInt8) -> Bool {
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"),
            UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "s"),
            UInt8(ascii: "o"), UInt8(ascii: "g"), UInt8(ascii: "h"):
            true
        default: false
        }
    }

    /// Parses a whole signature into its complete types. Spec limits: 255 bytes, 32 nested arrays and 32 nested
    /// structs.
    static func parseList(_ signature: some Collection<UInt8>) throws(WireFormatError) -> [WireType] {
        let bytes = Array(signature)
        guard bytes.count <= 255 else { throw WireFormatError("signature longer than 255 bytes") }
        var index = 0
        var types: [WireType] = []
        while index < bytes.count {
            types.append(try parseOne(bytes, &index, arrays: 0, structs: 0))
        }
        return types
    }

    /// Parses a signature that must hold exactly one complete type (a variant's).
    static func parseSingle(_ signature: some Collection<UInt8>) throws(WireFormatError) -> WireType {
        let types = try parseList(signature)
        guard types.count == 1 else {
            throw WireFormatError("variant signature '\(String(decoding: Array(signature), as: UTF8.self))' is not one complete type")
        }
        return types[0]
    }

    private static func parseOne(_ bytes: [UInt8], _ index: inout Int, arrays: Int, structs: Int)
        throws(WireFormatError) -> WireType
    {
        guard index < bytes.count else { throw WireFormatError("signature ends inside a type") }
        let code = bytes[index]
        index += 1
        if isBasic(code) { return .basic(code) }
        switch code {
        case UInt8(ascii: "v"):
            return .variant
        case UInt8(ascii: "a"):
            guard arrays < 32 else { throw WireFormatError("arrays nested deeper than 32") }
            if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                index += 1
                guard index < bytes.count, isBasic(bytes[index]) else {
                    throw WireFormatError("dictionary key is not a basic type")
                }
                let key = bytes[index]
                index += 1
                let value = try parseOne(bytes, &index, arrays: arrays + 1, structs: structs + 1)
                guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                    throw WireFormatError("dictionary entry does not close with '}'")
                }
                index += 1
                return .dictionary(key: key, value: value)
            }
            return .array(try parseOne(bytes, &index, arrays: arrays + 1, structs: structs))
        case UInt8(ascii: "("):
            guard structs < 32 else { throw WireFormatError("structs nested deeper than 32") }
            var fields: [WireType] = []
            while index < bytes.count, bytes[index] != UInt8(ascii: ")") {
                fields.append(try parseOne(bytes, &index, arrays: arrays, structs: structs + 1))
            }
            guard index < bytes.count else { throw WireFormatError("struct does not close with ')'") }
            index += 1
            guard !fields.isEmpty else { throw WireFormatError("empty struct") }
            return .structure(fields)
        default:
            throw WireFormatError("unknown type code '\(String(UnicodeScalar(code)))'")
        }
    }
}

/// Bytes that do not follow the D-Bus wire format, with what is wrong. A message that fails to parse is dropped;
/// a stream that fails to frame ends the connection (there is no way to find the next message).
public struct WireFormatError: Error, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
