internal import CDBus

/// A D-Bus type signature such as `a{sv}` or `(ayq)`: zero or more complete types.
///
/// The value is kept as text and checked against libdbus's own validator when it matters (before marshalling),
/// so a signature built from a literal never traps; an invalid one is reported as `.invalidSignature`.
public struct DBusSignature: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The signature of no values (a call without arguments).
    public static let empty = DBusSignature("")

    /// The concatenation of the given signatures, as for a message body.
    public init(concatenating signatures: some Sequence<DBusSignature>) {
        self.init(signatures.map(\.rawValue).joined())
    }

    public var isEmpty: Bool { rawValue.isEmpty }

    /// Whether this is a well-formed sequence of complete types within D-Bus limits (length 255, nesting depth).
    public var isValid: Bool {
        guard !rawValue.utf8.contains(0) else { return false }
        return rawValue.withCString { dbus_signature_validate($0, nil) != 0 }
    }

    /// Whether this is exactly one complete type (what an array element, a property or a variant holds).
    public var isSingleCompleteType: Bool {
        guard !rawValue.utf8.contains(0) else { return false }
        return rawValue.withCString { dbus_signature_validate_single($0, nil) != 0 }
    }

    /// Whether this is one basic type (what a dictionary key must be).
    public var isBasicType: Bool {
        guard rawValue.utf8.count == 1, let code = rawValue.utf8.first else { return false }
        return dbus_type_is_basic(Int32(code)) != 0
    }

    /// The complete types this signature is made of, in order; nil if the signature is invalid.
    public var completeTypes: [DBusSignature]? {
        guard isValid else { return nil }
        let bytes = Array(rawValue.utf8)
        var result: [DBusSignature] = []
        var start = 0
        while start < bytes.count {
            guard let end = Self.endOfCompleteType(in: bytes, from: start) else { return nil }
            result.append(DBusSignature(String(decoding: bytes[start..<end], as: UTF8.self)))
            start = end
        }
        return result
    }

    /// The index just past the complete type starting at `start`, or nil if it is cut short.
    private static func endOfCompleteType(in bytes: [UInt8], from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "a"):
            return endOfCompleteType(in: bytes, from: start + 1)
        case UInt8(ascii: "("), UInt8(ascii: "{"):
            let close = bytes[start] == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
            var index = start + 1
            while index < bytes.count, bytes[index] != close {
                guard let next = endOfCompleteType(in: bytes, from: index) else { return nil }
                index = next
            }
            return index < bytes.count ? index + 1 : nil
        default:
            return start + 1
        }
    }

    public var description: String { rawValue }
}
