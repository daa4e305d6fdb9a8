import CBOR

/// One whole SMP message as received: its header and its CBOR body, decoded.
public struct SMPResponse: Hashable, Sendable {
    public var header: SMPHeader
    public var body: CBORValue

    public init(header: SMPHeader, body: CBORValue) {
        self.header = header
        self.body = body
    }

    /// Limits for a response body: SMP bodies are shallow (image state is the deepest, at 3) and short.
    public static let cborLimits = CBORLimits(maxDepth: 8, maxItems: 1024, maxBytes: 65_535)

    /// Decodes a message whose bytes are exactly one header and the `length` bytes it announces.
    public init(message: [UInt8]) throws(SMPDecodeError) {
        guard let header = try SMPHeader(message) else { throw SMPDecodeError(.invalidCBOR, at: message.count, detail: "short header") }
        guard message.count == SMPHeader.size + Int(header.length) else {
            throw SMPDecodeError(.invalidCBOR, at: message.count, detail: "length \(header.length) disagrees with the body")
        }
        let body: CBORValue
        do {
            // Zephyr sends `{}` for an empty answer; a body of no bytes at all is read as the same empty map.
            body = header.length == 0 ? .map([]) : try CBORDecoder(limits: Self.cborLimits).decode(message[SMPHeader.size...])
        } catch {
            throw SMPDecodeError(.invalidCBOR, at: SMPHeader.size + error.offset, detail: error.code.rawValue)
        }
        guard case .map = body else { throw SMPDecodeError(.bodyNotAMap, at: SMPHeader.size) }
        self.init(header: header, body: body)
    }

    /// The error the device reports, if any (Zephyr "SMP Protocol Specification", "Minimal response"): a non-zero
    /// `rc` (SMP v1, and SMP-level errors in v2), or v2's `err: {group, rc}` with a non-zero `rc`.
    public func deviceError() throws(SMPDecodeError) -> SMPDeviceError? {
        if let rc = body["rc"] {
            guard let code = rc.integerValue else { throw .field("rc") }
            if code != 0 {
                let reason = try optional("rsn", body["rsn"]?.textValue, body["rsn"])
                return SMPDeviceError(rc: code, reason: reason)
            }
        }
        if let err = body["err"] {
            guard let group = err["group"]?.unsignedValue, let groupID = UInt16(exactly: group) else { throw .field("err.group") }
            guard let code = err["rc"]?.integerValue else { throw .field("err.rc") }
            if code != 0 { return SMPDeviceError(group: groupID, rc: code) }
        }
        return nil
    }
}

/// An optional field: absent is nil; present with the wrong type is the device's error.
func optional<T>(_ name: String, _ typed: T?, _ raw: CBORValue?) throws(SMPDecodeError) -> T? {
    guard raw != nil else { return nil }
    guard let typed else { throw .field(name) }
    return typed
}

func required<T>(_ name: String, _ typed: T?) throws(SMPDecodeError) -> T {
    guard let typed else { throw .field(name) }
    return typed
}
