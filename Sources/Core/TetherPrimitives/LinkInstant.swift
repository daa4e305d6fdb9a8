/// A point in gateway wall-clock time: nanoseconds since the Unix epoch, UTC.
///
/// The link core never reads a clock; every input carries the instant at which it happened. Timers are armed in
/// the same time base, so a test or a replay drives the session with a manual clock.
public struct LinkInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static func milliseconds(_ value: Int64) -> LinkInstant { LinkInstant(nanoseconds: value * 1_000_000) }

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    public func advanced(by duration: Duration) -> LinkInstant {
        LinkInstant(nanoseconds: nanoseconds + duration.nanoseconds)
    }

    public func duration(to other: LinkInstant) -> Duration { .nanoseconds(other.nanoseconds - nanoseconds) }

    public var description: String { "\(nanoseconds)ns" }
}

extension Duration {
    /// Whole nanoseconds (rounded toward zero).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
