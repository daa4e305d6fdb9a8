import LinkProtocol
import TetherPrimitives

/// A device's tick counter: milliseconds since boot, running `driftPPM` parts per million fast (positive) or slow
/// (negative) against true time, as a real crystal does.
public struct DriftingClock: Hashable, Sendable {
    public var driftPPM: Double
    public private(set) var bootedAt: Timestamp

    public init(driftPPM: Double, bootedAt: Timestamp) {
        self.driftPPM = driftPPM
        self.bootedAt = bootedAt
    }

    /// Ticks since boot at true time `now` (32-bit on the wire; wraps after 49.7 days, §9.8).
    public func ticks(at now: Timestamp) -> UInt64 {
        let elapsed = Double(now.nanoseconds - bootedAt.nanoseconds) / 1_000_000
        return UInt64(max(0, (elapsed * (1 + driftPPM / 1_000_000)).rounded(.down)))
    }

    public func wireTicks(at now: Timestamp) -> UInt32 { UInt32(truncatingIfNeeded: ticks(at: now)) }

    /// The true time at which the clock shows `ticks` (inverse of `ticks(at:)`, to the nanosecond).
    public func instant(atTicks ticks: UInt64) -> Timestamp {
        Timestamp(nanoseconds: bootedAt.nanoseconds + Int64((Double(ticks) * 1_000_000 / (1 + driftPPM / 1_000_000)).rounded()))
    }

    public mutating func reboot(at now: Timestamp) { bootedAt = now }
}
