/// Why bytes from the peer are not a valid frame or message. Always the remote side's fault: the gateway's own
/// frames are built by the encoder and cannot be malformed.
public struct FrameError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: Hashable, Sendable {
        /// Bytes before a magic byte that could not start a frame; they were skipped (§3.3).
        case unsynchronized
        /// The header's length field is over 240 (§4).
        case lengthOutOfRange
        /// The CRC does not match (§4.3).
        case badCRC
        /// A frame stopped before its end: it stalled (§3.4) or a new frame began inside it.
        case truncated
        /// The payload is shorter than the message layout or a field is out of range (§7).
        case malformed
        /// A type that §7 does not define for this version (§6.6).
        case unknownType
    }

    public var code: Code
    /// The sequence number read from the header, when a header was read. Only a hint after a bad CRC (§4.3).
    public var sequence: SequenceNumber?
    /// The message type read from the header, when a header was read.
    public var type: UInt8?
    /// How many bytes were discarded.
    public var discardedBytes: Int
    public var reason: String

    public init(_ code: Code, sequence: SequenceNumber? = nil, type: UInt8? = nil, discardedBytes: Int = 0, reason: String) {
        self.code = code
        self.sequence = sequence
        self.type = type
        self.discardedBytes = discardedBytes
        self.reason = reason
    }

    public var description: String {
        var text = "\(code): \(reason)"
        if let sequence { text += " (seq \(sequence))" }
        return text
    }

    /// The NACK reason that tells the peer what happened to its frame (§10).
    public var nackReason: NackReason? {
        switch code {
        case .unsynchronized, .lengthOutOfRange: nil  // no trustworthy sequence number to name
        case .badCRC: .badCRC
        case .truncated: .truncated
        case .malformed: .malformed
        case .unknownType: .unknownType
        }
    }
}
