/// A point in gateway wall-clock time: nanoseconds since the Unix epoch, UTC. One type for the link core, the
/// store, sync and the simulators (it was `LinkInstant` while only the link core used it).
///
/// The cores never read a clock; every input carries the instant at which it happened. Timers are armed in
/// the same time base, so a test or a replay drives the session with a manual clock.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static func milliseconds(_ value: Int64) -> Timestamp { Timestamp(nanoseconds: value * 1_000_000) }

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    public func advanced(by duration: Duration) -> Timestamp {
        Timestamp(nanoseconds: nanoseconds + duration.nanoseconds)
    }

    public func duration(to other: Timestamp) -> Duration { .nanoseconds(other.nanoseconds - nanoseconds) }

    public var description: String { "\(nanoseconds)ns" }
}

extension Duration {
    /// Whole nanoseconds (rounded toward zero).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
