/// The fixed 7-byte frame header of §4, identical in every protocol version (§4.2).
public struct FrameHeader: Hashable, Sendable {
    /// §4.1: every frame starts with this byte.
    public static let magic: UInt8 = 0x54
    public static let size = 7
    public static let crcSize = 2
    /// §4: the payload length is one byte and at most 240.
    public static let maxPayloadLength = 240
    public static let maxFrameSize = size + maxPayloadLength + crcSize

    public var version: UInt8
    public var type: UInt8
    public var flags: FrameFlags
    public var sequence: SequenceNumber
    public var payloadLength: Int

    public init(version: UInt8, type: UInt8, flags: FrameFlags = [], sequence: SequenceNumber, payloadLength: Int) {
        self.version = version
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.payloadLength = payloadLength
    }

    public var frameSize: Int { Self.size + payloadLength + Self.crcSize }
}

/// Frame flags (§4). Reserved bits are sent as 0 and ignored on receipt.
public struct FrameFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// §5.1: set on every retransmission of a frame.
    public static let retransmit = FrameFlags(rawValue: 1 << 0)
}

/// A frame as it stands on the wire: header and payload bytes, CRC already checked.
public struct Frame: Hashable, Sendable {
    public var header: FrameHeader
    public var payload: ArraySlice<UInt8>

    public init(header: FrameHeader, payload: ArraySlice<UInt8>) {
        self.header = header
        self.payload = payload
    }
}
