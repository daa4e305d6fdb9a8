import TetherPrimitives
/// ACK (§7.3): cumulative through `through`, plus a selective bitmap for the 32 frames after it.
public struct Ack: Hashable, Sendable {
    public var through: SequenceNumber
    public var selective: UInt32

    public init(through: SequenceNumber, selective: UInt32 = 0) {
        self.through = through
        self.selective = selective
    }

    /// Whether this ACK covers `sequence`.
    public func covers(_ sequence: SequenceNumber) -> Bool {
        let distance = through.distance(to: sequence)
        if distance <= 0 { return true }
        return distance <= 32 && selective & (1 << UInt32(distance - 1)) != 0
    }

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let through = reader.readUInt16(), let selective = reader.readUInt32() else {
            throw FrameError(.malformed, reason: "ACK needs 6 bytes")
        }
        self.init(through: SequenceNumber(through), selective: selective)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(through.rawValue)
        writer.write(selective)
    }
}

/// NACK (§7.4): a rejected frame, why, and reason-specific detail.
public struct Nack: Hashable, Sendable {
    public var sequence: SequenceNumber
    public var reason: NackReason
    public var detail: [UInt8]

    public init(sequence: SequenceNumber, reason: NackReason, detail: [UInt8] = []) {
        self.sequence = sequence
        self.reason = reason
        self.detail = detail
    }

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let sequence = reader.readUInt16(), let code = reader.readUInt8() else {
            throw FrameError(.malformed, reason: "NACK needs at least 3 bytes")
        }
        guard let reason = NackReason(rawValue: code) else {
            throw FrameError(.malformed, reason: "NACK reason \(code) is not in §10")
        }
        self.init(sequence: SequenceNumber(sequence), reason: reason, detail: Array(reader.readBytes(reader.remaining) ?? []))
    }

    func write(to writer: inout ByteWriter) {
        writer.write(sequence.rawValue)
        writer.write(reason.rawValue)
        writer.write(contentsOf: detail)
    }
}
