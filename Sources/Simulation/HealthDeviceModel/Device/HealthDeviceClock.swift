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
    /// While not set, dates read "not known" (all zero) instead of counting from 2000-01-01.
    public let reportsUnknownDateWhenNotSet: Bool

    public init(set: Bool, skewSeconds: Int64, poweredOnAt: Timestamp, reportsUnknownDateWhenNotSet: Bool = false) {
        state = set ? .set(skewNanoseconds: skewSeconds * 1_000_000_000) : .notSet(poweredOnAt: poweredOnAt)
        self.reportsUnknownDateWhenNotSet = reportsUnknownDateWhenNotSet
    }

    /// GATT Specification Supplement, Date Time: year, month and day 0 mean "not known".
    public static let unknownDate = DateTimeField(year: 0, month: 0, day: 0, hours: 0, minutes: 0, seconds: 0)

    /// The clock says its date is not known (`reportsUnknownDateWhenNotSet` and not set).
    public var reportsUnknownDate: Bool { reportsUnknownDateWhenNotSet && !isSet }

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
        if reportsUnknownDate { return Self.unknownDate }
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
