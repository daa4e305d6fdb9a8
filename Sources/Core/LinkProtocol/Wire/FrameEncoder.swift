/// Builds frames (§4) and cuts the outgoing stream into ATT values (§3.1).
public enum FrameEncoder {
    /// Appends one frame with `payload` to `stream`.
    public static func append(
        version: UInt8, type: UInt8, flags: FrameFlags = [], sequence: SequenceNumber,
        payload: some Collection<UInt8>, to stream: inout [UInt8]
    ) {
        precondition(payload.count <= FrameHeader.maxPayloadLength, "payload over §4's 240-byte limit")
        let start = stream.count
        stream.append(FrameHeader.magic)
        stream.append(version)
        stream.append(type)
        stream.append(flags.rawValue)
        stream.append(UInt8(truncatingIfNeeded: sequence.rawValue))
        stream.append(UInt8(truncatingIfNeeded: sequence.rawValue >> 8))
        stream.append(UInt8(payload.count))
        stream.append(contentsOf: payload)
        let crc = stream.withUnsafeBytes { raw in
            CRC16.update(CRC16.initialValue, UnsafeRawBufferPointer(rebasing: raw[start...]))
        }
        stream.append(UInt8(truncatingIfNeeded: crc))
        stream.append(UInt8(truncatingIfNeeded: crc >> 8))
    }

    /// One frame as its own byte array.
    public static func frame(
        version: UInt8, type: UInt8, flags: FrameFlags = [], sequence: SequenceNumber, payload: some Collection<UInt8>
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(FrameHeader.size + payload.count + FrameHeader.crcSize)
        append(version: version, type: type, flags: flags, sequence: sequence, payload: payload, to: &bytes)
        return bytes
    }

    /// §3.1: the ATT payload size for an MTU: `MTU − 3`, at least the 20 bytes of the minimum MTU (§3.2) and at
    /// most 244 (the gateway's safety margin against controllers that misreport a larger MTU).
    public static func attValueSize(mtu: Int) -> Int {
        min(max(mtu - 3, 20), 244)
    }

    /// Cuts a stream of frames into ATT values of at most `valueSize` bytes (§3.1).
    public static func segments(of stream: [UInt8], valueSize: Int) -> [[UInt8]] {
        precondition(valueSize > 0)
        return stride(from: 0, to: stream.count, by: valueSize).map {
            Array(stream[$0..<min($0 + valueSize, stream.count)])
        }
    }
}
