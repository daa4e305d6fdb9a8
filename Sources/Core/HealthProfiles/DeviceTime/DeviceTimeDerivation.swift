import TetherPrimitives

/// How a reading's effective UTC was derived (stored beside it, so that a wrong derivation can be found and redone).
public enum TimeBasis: String, Hashable, Sendable, CaseIterable {
    /// The gateway set the device clock in UTC: the device time is read as UTC.
    case clockSetByGateway = "clock-set-by-gateway"
    /// The device clock keeps local time and Local Time Information (zone and DST) gives its offset.
    case localTimeWithOffset = "local-time-with-offset"
    /// The offset comes from a reading of the device clock at a known gateway instant (the "coincident time stamp"
    /// of IEEE 11073-20601 and the FHIR PHD guide): used when nothing else is known, or when the clock has moved
    /// away from what the gateway set by more than the tolerance.
    case coincidentClockReading = "coincident-clock-reading"
    /// A CGM reading: the session start time (with its own zone) plus the time offset in minutes (CGMS v1.0.1).
    case cgmSessionStart = "cgm-session-start"
    /// A device time with nothing known about the clock: read as UTC and marked so; it may be off by a time zone.
    case deviceTimeUnverified = "device-time-unverified"
    /// No usable device time (none sent, the clock not set, a date not known): the gateway's time of receipt.
    case receipt = "receipt"
}

/// The time a reading carries, as the device sent it (kept as raw beside the derived UTC).
public enum ReadingTime: Hashable, Sendable {
    case none
    /// A Date Time stamp; for Glucose, the Base Time with the Time Offset (sint16 minutes, GLS v1.0 Glucose
    /// Measurement) added to it, which gives the user-facing time.
    case dateTime(DeviceDateTime, offsetMinutes: Int16 = 0)
    /// A CGM Time Offset (minutes since the session start).
    case cgmTimeOffset(minutes: UInt16)
    /// The device says its clock is not set (the PLX Spot-check "device clock is not set" flag, CGM status…): the
    /// stamp it sent, if any, means nothing.
    case clockNotSet(DeviceDateTime?)
}

/// What the gateway knows about a device's clock on this connection.
public struct DeviceClockFacts: Hashable, Sendable {
    public enum Setting: Hashable, Sendable {
        /// The gateway wrote its UTC time to the device (`TimeWritePolicy`) and nothing has changed it since.
        case setByGatewayInUTC
        /// The device keeps local time; its Local Time Information was read.
        case localTime(LocalTimeInformation)
        case unknown
    }

    /// A reading of the device clock (Current Time, or the stamp of a live measurement) and the gateway's time
    /// when it arrived.
    public struct Reading: Hashable, Sendable {
        public var deviceTime: DeviceDateTime
        public var fractions256: UInt8
        public var receivedAt: Timestamp

        public init(deviceTime: DeviceDateTime, fractions256: UInt8 = 0, receivedAt: Timestamp) {
            self.deviceTime = deviceTime
            self.fractions256 = fractions256
            self.receivedAt = receivedAt
        }
    }

    /// The CGM Session Start Time (0x2AAA: Date Time, Time Zone, DST Offset; CGMS v1.0.1).
    public struct CGMSessionStart: Hashable, Sendable {
        public var dateTime: DeviceDateTime
        public var localTime: LocalTimeInformation

        public init(dateTime: DeviceDateTime, localTime: LocalTimeInformation) {
            self.dateTime = dateTime
            self.localTime = localTime
        }
    }

    public var setting: Setting
    public var reading: Reading?
    public var cgmSessionStart: CGMSessionStart?
    /// How far the clock may be from what its setting says before the reading's offset is trusted instead.
    public var skewTolerance: Duration

    public init(setting: Setting = .unknown, reading: Reading? = nil, cgmSessionStart: CGMSessionStart? = nil, skewTolerance: Duration = .seconds(120)) {
        self.setting = setting
        self.reading = reading
        self.cgmSessionStart = cgmSessionStart
        self.skewTolerance = skewTolerance
    }
}

/// A reading's time as stored: the raw device time, the effective UTC, how it was derived, and the device clock's
/// skew measured on this connection.
public struct DerivedTime: Hashable, Sendable {
    public var raw: ReadingTime
    public var utc: Timestamp
    public var basis: TimeBasis
    /// Device clock minus gateway clock when the device was read, after the offset its setting says (positive: the
    /// device is ahead). With no setting known it includes the device's unknown zone. Nil without a reading.
    public var skew: Duration?
}

/// Derives a reading's effective UTC from its raw time and what the gateway knows about the clock.
///
/// Rules, in order:
/// 1. No time, a clock reported not set, or a date not known (year, month or day 0, GSS Date Time): receipt.
/// 2. A CGM time offset: the session start in UTC (its own zone and DST when known, otherwise as rule 3 reads a
///    Date Time) plus the offset; without a session start, receipt.
/// 3. A Date Time (plus Glucose's time offset): with a known setting (set by the gateway in UTC, or local time with
///    a known offset) whose skew is within the tolerance, or not measured, that setting's offset; otherwise, with a
///    reading of the clock, the offset that reading shows (coincident time stamp); otherwise read as UTC, unverified.
/// 4. A time a Timestamp cannot hold (before about 1678, after 2262): receipt.
public enum DeviceTimeDerivation {
    public static func derive(_ raw: ReadingTime, receivedAt: Timestamp, clock: DeviceClockFacts) -> DerivedTime {
        let skew = measuredSkew(clock)
        func receipt() -> DerivedTime { DerivedTime(raw: raw, utc: receivedAt, basis: .receipt, skew: skew) }
        switch raw {
        case .none, .clockNotSet:
            return receipt()
        case .cgmTimeOffset(let minutes):
            guard let start = clock.cgmSessionStart, let startSeconds = start.dateTime.secondsSinceEpochAsIfUTC else { return receipt() }
            let readingSeconds = startSeconds + Int64(minutes) * 60
            if let offset = start.localTime.offsetFromUTC {
                guard let utc = EpochArithmetic.instant(seconds: readingSeconds - offset.components.seconds) else { return receipt() }
                return DerivedTime(raw: raw, utc: utc, basis: .cgmSessionStart, skew: skew)
            }
            guard let (utc, basis) = interpret(asIfUTC: readingSeconds, clock: clock) else { return receipt() }
            return DerivedTime(raw: raw, utc: utc, basis: basis, skew: skew)
        case .dateTime(let dateTime, let offsetMinutes):
            guard let seconds = dateTime.secondsSinceEpochAsIfUTC,
                let (utc, basis) = interpret(asIfUTC: seconds + Int64(offsetMinutes) * 60, clock: clock)
            else { return receipt() }
            return DerivedTime(raw: raw, utc: utc, basis: basis, skew: skew)
        }
    }

    /// Rule 3 for a device time given as seconds read as if UTC.
    private static func interpret(asIfUTC seconds: Int64, clock: DeviceClockFacts) -> (Timestamp, TimeBasis)? {
        let setting = settingOffset(clock.setting)
        if let (offset, basis) = setting {
            let withinTolerance = measuredSkew(clock).map { EpochArithmetic.magnitude($0) <= clock.skewTolerance } ?? true
            if withinTolerance {
                return EpochArithmetic.instant(seconds: seconds - offset.components.seconds).map { ($0, basis) }
            }
        }
        if let rawSkew = rawSkew(clock) {
            guard let base = EpochArithmetic.instant(seconds: seconds) else { return nil }
            let (shifted, overflow) = base.nanoseconds.subtractingReportingOverflow(rawSkew.nanoseconds)
            return overflow ? nil : (Timestamp(nanoseconds: shifted), .coincidentClockReading)
        }
        return EpochArithmetic.instant(seconds: seconds).map { ($0, .deviceTimeUnverified) }
    }

    private static func settingOffset(_ setting: DeviceClockFacts.Setting) -> (Duration, TimeBasis)? {
        switch setting {
        case .setByGatewayInUTC: return (.zero, .clockSetByGateway)
        case .localTime(let information): return information.offsetFromUTC.map { ($0, .localTimeWithOffset) }
        case .unknown: return nil
        }
    }

    /// The device clock read as if UTC, minus the gateway's time at receipt; nil without a usable reading.
    static func rawSkew(_ clock: DeviceClockFacts) -> Duration? {
        guard let reading = clock.reading, let seconds = reading.deviceTime.secondsSinceEpochAsIfUTC,
            let device = EpochArithmetic.instant(seconds: seconds, nanoseconds: Int64(reading.fractions256) * 1_000_000_000 / 256)
        else { return nil }
        let (difference, overflow) = device.nanoseconds.subtractingReportingOverflow(reading.receivedAt.nanoseconds)
        return overflow ? nil : .nanoseconds(difference)
    }

    /// The skew after the setting's offset (`DerivedTime.skew`).
    static func measuredSkew(_ clock: DeviceClockFacts) -> Duration? {
        guard let raw = rawSkew(clock) else { return nil }
        guard let (offset, _) = settingOffset(clock.setting) else { return raw }
        return raw - offset
    }
}
