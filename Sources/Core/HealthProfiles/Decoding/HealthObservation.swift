/// One sample as the store would keep it: what was measured (metric and MDC code), the value and its status, the
/// unit as reported and the canonical one, when (as the device said), for whom, and which stored record it was.
///
/// A blood pressure reading is four observations (systolic, diastolic, mean, pulse); a NaN stays an observation with
/// status `nan` and no number. Intermediate values (cuff pressure, intermediate temperature) are observations marked
/// `isIntermediate`, which the store never keeps.
public struct HealthObservation: Hashable, Sendable, Encodable {
    public var metric: HealthMetric
    public var value: MeasuredValue
    public var reportedUnit: HealthUnit
    public var canonicalUnit: HealthUnit
    /// Nil when the value is not a number (or a conversion would overflow).
    public var canonicalValue: CanonicalValue?
    public var time: ObservationTime
    /// The device's user index (BLS, WSS, BCS user id; 0xFF means "unknown user" and is kept as reported).
    public var userIndex: UInt8?
    /// The record's sequence number (Glucose), unsigned 16 bits.
    public var sequenceNumber: UInt16?
    public var isIntermediate: Bool
    /// What qualifies the value without changing its metric: a temperature's body site, a glucose sample type and
    /// location, a carbohydrate or medication kind.
    public var qualifier: String?
    /// A code more specific than the metric's own, when the record says more (a glucose concentration's specimen:
    /// GlucoseSpecimen); `mdcCode` is this when set.
    public var specificMDCCode: UInt32?

    public init(
        metric: HealthMetric, value: MeasuredValue, unit: HealthUnit, time: ObservationTime = .notSupplied,
        userIndex: UInt8? = nil, sequenceNumber: UInt16? = nil, isIntermediate: Bool = false, qualifier: String? = nil,
        specificMDCCode: UInt32? = nil
    ) {
        self.metric = metric
        self.specificMDCCode = specificMDCCode
        self.value = value
        self.reportedUnit = unit
        self.canonicalUnit = unit.canonical
        self.canonicalValue = value.decimal.flatMap { unit.canonicalValue($0) }
        self.time = time
        self.userIndex = userIndex
        self.sequenceNumber = sequenceNumber
        self.isIntermediate = isIntermediate
        self.qualifier = qualifier
    }

    public var mdcCode: UInt32? { specificMDCCode ?? metric.mdcCode }

    /// Whether the device supplied a time for this value (a clock time or a session offset); a value without one
    /// gets its time of receipt in the store and says so.
    public var deviceSuppliedTime: Bool {
        if case .notSupplied = time { return false }
        return true
    }

    enum CodingKeys: String, CodingKey {
        case metric, mdcCode = "mdc_code", value, reportedUnit = "reported_unit", canonicalUnit = "canonical_unit"
        case canonicalValue = "canonical_value", time, deviceSuppliedTime = "device_supplied_time"
        case userIndex = "user_index", sequenceNumber = "sequence_number", isIntermediate = "intermediate", qualifier
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(metric, forKey: .metric)
        try container.encodeIfPresent(mdcCode, forKey: .mdcCode)
        try container.encode(value, forKey: .value)
        try container.encode(reportedUnit, forKey: .reportedUnit)
        try container.encode(canonicalUnit, forKey: .canonicalUnit)
        try container.encodeIfPresent(canonicalValue, forKey: .canonicalValue)
        try container.encode(time, forKey: .time)
        try container.encode(deviceSuppliedTime, forKey: .deviceSuppliedTime)
        try container.encodeIfPresent(userIndex, forKey: .userIndex)
        try container.encodeIfPresent(sequenceNumber, forKey: .sequenceNumber)
        try container.encode(isIntermediate, forKey: .isIntermediate)
        try container.encodeIfPresent(qualifier, forKey: .qualifier)
    }
}

/// When the device says a value was taken. The UTC derivation (which needs the time basis: clock set by the gateway,
/// device local time, session start) is not the parser's job; this is the raw statement.
public enum ObservationTime: Hashable, Sendable, Encodable {
    /// A calendar time on the device's clock (for Glucose: base time plus time offset, the user-facing time).
    case deviceClock(DeviceDateTime)
    /// CGM: minutes since the session start (CGMS §3.2.1.4), to be added to the CGM Session Start Time.
    case minutesSinceSessionStart(UInt16)
    /// The value carries no time: the store uses the time of receipt and says so.
    case notSupplied

    enum CodingKeys: String, CodingKey { case basis, deviceTime = "device_time", minutes }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .deviceClock(let time):
            try container.encode("device_clock", forKey: .basis)
            try container.encode(time.description, forKey: .deviceTime)
        case .minutesSinceSessionStart(let minutes):
            try container.encode("session_offset", forKey: .basis)
            try container.encode(minutes, forKey: .minutes)
        case .notSupplied:
            try container.encode("none", forKey: .basis)
        }
    }
}

extension DeviceDateTime: Encodable {
    /// Encoded as its ISO-8601-like text without zone (`2024-11-24T13:42:07`; zeros where the device does not know).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
