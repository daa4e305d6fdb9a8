import TetherPrimitives

/// A health device's own wall clock: set (true time plus a skew) or never set (counting from 2000-01-01 at
/// power-on). Pure: the true time comes in with every question.
public struct HealthDeviceClock: Hashable, Sendable {
    /// 2000-01-01T00:00:00 in Unix-epoch seconds: where a never-set clock starts.
    public static let unsetEpochSeconds: Int64 = 946_684_800

    public enum State: Hashable, Sendable {
        case set(skewNanoseconds: Int64)
        case notSet(poweredOnAt: Timestamp)
    }

    public private(set) var state: State

    public init(set: Bool, skewSeconds: Int64, poweredOnAt: Timestamp) {
        state = set ? .set(skewNanoseconds: skewSeconds * 1_000_000_000) : .notSet(poweredOnAt: poweredOnAt)
    }

    public var isSet: Bool {
        if case .set = state { return true }
        return false
    }

    /// What the device's clock reads at true time `now`, in nanoseconds counted like Unix time.
    public func reading(at now: Timestamp) -> Int64 {
        switch state {
        case .set(let skew): now.nanoseconds + skew
        case .notSet(let poweredOnAt): Self.unsetEpochSeconds * 1_000_000_000 + (now.nanoseconds - poweredOnAt.nanoseconds)
        }
    }

    public func dateTime(at now: Timestamp) -> DateTimeField {
        let nanoseconds = reading(at: now)
        return DateTimeField(secondsSinceEpoch: nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds - 999_999_999) / 1_000_000_000)
    }

    /// A client wrote the time: from now on the clock reads `deviceNanoseconds` at `now`.
    public mutating func set(to deviceNanoseconds: Int64, at now: Timestamp) {
        state = .set(skewNanoseconds: deviceNanoseconds - now.nanoseconds)
    }

    /// Power loss or reset: the clock is not set any more.
    public mutating func lose(at now: Timestamp) {
        state = .notSet(poweredOnAt: now)
    }
}
