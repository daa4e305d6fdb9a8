import CBOR

/// Why bytes from a device are not an SMP response this client can read, and where: the device broke the protocol.
/// (Errors the device reports on purpose are `SMPDeviceError`.)
public struct SMPDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The three reserved bits of header byte 0 are not zero.
        case reservedBitsSet
        /// Header version 2 or 3 (reserved).
        case unknownVersion
        case unknownOperation
        /// A request (read or write) where a response belongs.
        case notAResponse
        /// The header's length is over what this client accepts for one response.
        case tooLong
        /// The body is not one well-formed CBOR item within limits.
        case invalidCBOR
        /// The body is CBOR but not a map.
        case bodyNotAMap
        /// A field the command requires is missing, or has the wrong type or range (`field` names it).
        case invalidField
    }

    public var code: Code
    /// Byte offset in the message (header included), where one is known.
    public var offset: Int
    /// The CBOR decoder's error for `.invalidCBOR`; the field's name for `.invalidField`.
    public var detail: String

    public init(_ code: Code, at offset: Int = 0, detail: String = "") {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    static func field(_ name: String) -> SMPDecodeError { SMPDecodeError(.invalidField, at: SMPHeader.size, detail: name) }

    public var description: String {
        "SMP \(code.rawValue) at byte \(offset)" + (detail.isEmpty ? "" : " (\(detail))")
    }
}
