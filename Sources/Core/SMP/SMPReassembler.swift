/// Joins the notifications (BLE) or datagrams that carry SMP messages into whole messages, by the length in each
/// header (Zephyr "SMP transport specification": a response larger than one notification is split across several
/// and the client reassembles it by the header's length). Several messages may arrive in one buffer.
///
/// SMP has no sync marker, so bytes that are not a header cannot be skipped over: the buffer is dropped and the
/// error thrown; requests waiting for an answer time out and are retried by the client.
public struct SMPReassembler {
    /// The longest message accepted (header included).
    public let maxMessageSize: Int
    /// Responses only (a client), or requests only (a device model).
    public let acceptsResponses: Bool
    private var buffer: [UInt8] = []

    public init(maxMessageSize: Int = SMPHeader.size + 65_535, acceptsResponses: Bool = true) {
        self.maxMessageSize = maxMessageSize
        self.acceptsResponses = acceptsResponses
    }

    public var bufferedByteCount: Int { buffer.count }

    public mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// Forgets a partial message (a disconnect).
    public mutating func reset() { buffer.removeAll() }

    /// The next whole message, nil when more bytes are needed. On an error the buffer is dropped.
    public mutating func next() throws(SMPDecodeError) -> [UInt8]? {
        let header: SMPHeader
        do {
            guard let parsed = try SMPHeader(buffer) else { return nil }
            header = parsed
        } catch {
            buffer.removeAll()
            throw error
        }
        guard header.operation.isResponse == acceptsResponses else {
            buffer.removeAll()
            throw SMPDecodeError(.notAResponse, at: 0)
        }
        let size = SMPHeader.size + Int(header.length)
        guard size <= maxMessageSize else {
            buffer.removeAll()
            throw SMPDecodeError(.tooLong, at: 2, detail: "\(size) > \(maxMessageSize)")
        }
        guard buffer.count >= size else { return nil }
        let message = Array(buffer[..<size])
        buffer.removeFirst(size)
        return message
    }
}
