import TetherPrimitives
/// HIT_EVENT (§7.5): one consumption event as the device recorded it.
public struct HitEvent: Hashable, Sendable {
    /// The event sequence as sent: 16 bits in version 1 (it wraps, §8.9), 32 bits in version 2.
    public var eventSequence: UInt32
    public var bootCounter: UInt16
    /// Milliseconds of the device clock since boot `bootCounter` (wraps after 49.7 days, §9.8).
    public var ticks: UInt32
    public var durationMilliseconds: UInt16
    /// 0…100.
    public var intensity: UInt8

    public init(eventSequence: UInt32, bootCounter: UInt16, ticks: UInt32, durationMilliseconds: UInt16, intensity: UInt8) {
        self.eventSequence = eventSequence
        self.bootCounter = bootCounter
        self.ticks = ticks
        self.durationMilliseconds = durationMilliseconds
        self.intensity = intensity
    }

    /// Width of `eventSequence` on the wire in a protocol version (§6.7).
    public static func sequenceBits(version: UInt8) -> Int { version >= ProtocolVersion.v2 ? 32 : 16 }

    init(reading reader: inout ByteReader, version: UInt8) throws(FrameError) {
        let sequence: UInt32?
        if Self.sequenceBits(version: version) == 32 {
            sequence = reader.readUInt32()
        } else {
            sequence = reader.readUInt16().map(UInt32.init)
        }
        guard let sequence, let boot = reader.readUInt16(), let ticks = reader.readUInt32(),
            let duration = reader.readUInt16(), let intensity = reader.readUInt8()
        else { throw FrameError(.malformed, reason: "HIT_EVENT shorter than its version-\(version) layout") }
        guard intensity <= 100 else { throw FrameError(.malformed, reason: "HIT_EVENT intensity \(intensity) over 100") }
        self.init(eventSequence: sequence, bootCounter: boot, ticks: ticks, durationMilliseconds: duration, intensity: intensity)
    }

    func write(to writer: inout ByteWriter, version: UInt8) {
        if Self.sequenceBits(version: version) == 32 {
            writer.write(eventSequence)
        } else {
            writer.write(UInt16(truncatingIfNeeded: eventSequence))
        }
        writer.write(bootCounter)
        writer.write(ticks)
        writer.write(durationMilliseconds)
        writer.write(intensity)
    }
}
