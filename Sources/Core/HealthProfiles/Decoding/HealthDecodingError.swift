/// Why bytes are not a value of the characteristic they came from. Every refusal names the field and the byte
/// offset where it happened, so a technician can hold the message next to the hex.
///
/// Errors are always the sender's fault (the device's bytes); equal by code, field and offset.
public struct HealthDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable, Encodable {
        /// The value ends before a field its flags announce.
        case truncated
        /// A field's value is outside what the specification allows (a Date Time month of 13, a CGM record size
        /// below the minimum, an odd byte where RR intervals are read two at a time).
        case invalidField = "invalid_field"
        /// The E2E-CRC does not match the record (CGMS §3.2: the Collector discards such a record).
        case crcMismatch = "crc_mismatch"
        /// Bytes beyond what the flags announce, where the specification allows none.
        case unexpectedBytes = "unexpected_bytes"
        /// The characteristic is not one this decoder knows.
        case unknownCharacteristic = "unknown_characteristic"
    }

    public var code: Code
    public var characteristic: String
    public var field: String
    /// Offset in the characteristic value where the field starts.
    public var offset: Int
    public var detail: String

    public init(_ code: Code, characteristic: String, field: String, offset: Int, detail: String = "") {
        self.code = code
        self.characteristic = characteristic
        self.field = field
        self.offset = offset
        self.detail = detail
    }

    public var description: String {
        var text = "\(characteristic): \(code.rawValue) \(field) at offset \(offset)"
        if !detail.isEmpty { text += " (\(detail))" }
        return text
    }

    public static func == (left: Self, right: Self) -> Bool {
        left.code == right.code && left.field == right.field && left.offset == right.offset
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(field)
        hasher.combine(offset)
    }
}
