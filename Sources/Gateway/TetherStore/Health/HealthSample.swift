import TetherPrimitives

/// How a sample's effective UTC was derived from what the device said (issue 14, "Device time"). The same cases and
/// names as HealthProfiles' `TimeBasis`, which decides it (`DeviceTimeDerivation`); kept here as the column's own
/// type so that the store reads and checks rows without the parsers.
public enum HealthTimeBasis: String, Codable, Hashable, Sendable, CaseIterable {
    /// The gateway set the device's clock in UTC (Current Time 0x2A2B or Date Time 0x2A08 written by it).
    case clockSetByGateway = "clock-set-by-gateway"
    /// The device keeps local time and Local Time Information (0x2A0F) gave its offset.
    case localTimeWithOffset = "local-time-with-offset"
    /// The offset from a reading of the device's clock at a known gateway instant (the coincident time stamp).
    case coincidentClockReading = "coincident-clock-reading"
    /// A CGM's session start time plus the record's time offset (CGMS v1.0.1).
    case cgmSessionStart = "cgm-session-start"
    /// A device time with nothing known about the clock: read as UTC and marked so; it may be off by a time zone.
    case deviceTimeUnverified = "device-time-unverified"
    /// No usable time from the device (none sent, or its clock not set): the instant the gateway received it.
    case receipt
}

/// Which lane brought a sample: live notifications and indications, stored records read from a cursor, or a
/// deletion's or correction's replacement.
public enum HealthLane: String, Codable, Hashable, Sendable, CaseIterable {
    case hot
    case cold
    case change
}

/// One value of one record of a health device, as a lane hands it to `HealthStore` (the parsers in
/// `HealthProfiles` produce it; the store knows only these plain terms). A record with several values (a blood
/// pressure with systolic, diastolic, mean and pulse) is several samples with the same raw bytes.
public struct HealthSample: Hashable, Sendable {
    /// IEEE 11073-10101 MDC code, `partition << 16 | term code` (150021 systolic blood pressure, 149546 pulse rate).
    public var metricCode: Int
    /// The n-th value of `metricCode` in its record, 0 for the first (a heart-rate notification's RR intervals).
    public var occurrence: Int
    public var value: HealthValue
    /// The reading's time in UTC, as derived on `timeBasis`.
    public var effectiveAt: Timestamp
    /// The device's own time as it sent it, in text (`2026-11-01T08:00:00`, `offset 125 min`); `nil` when it sent
    /// none. Kept beside the derived UTC so that a wrong derivation can be redone.
    public var deviceTime: String?
    public var timeBasis: HealthTimeBasis
    /// Device clock minus gateway clock when the device was read, in milliseconds; `nil` when not measured.
    public var skewMilliseconds: Int64?
    /// The User Data Service user index (0…255; 0xFF is the spec's "unknown user"); `nil` for a single-user device.
    public var userIndex: Int?
    /// The record's sequence number (GLS, PLXS) or time offset (CGMS) in its stream; `nil` when it has none.
    public var recordSequence: Int64?
    /// The cursor epoch the sequence belongs to (0 until the device's numbering restarts).
    public var epoch: Int64
    public var lane: HealthLane
    /// The characteristic the value came from, 128-bit lowercase (`00002a35-0000-1000-8000-00805f9b34fb`).
    public var characteristic: String
    /// The characteristic value as received; required except on the change lane.
    public var rawBytes: [UInt8]?
    /// The parser that decoded `rawBytes`, so that rows a later fix would decode differently can be found.
    public var parserVersion: Int?
    public var receivedAt: Timestamp

    public init(
        metricCode: Int, occurrence: Int = 0, value: HealthValue, effectiveAt: Timestamp, deviceTime: String?,
        timeBasis: HealthTimeBasis, skewMilliseconds: Int64? = nil, userIndex: Int? = nil, recordSequence: Int64? = nil,
        epoch: Int64 = 0, lane: HealthLane, characteristic: String, rawBytes: [UInt8]?, parserVersion: Int?, receivedAt: Timestamp
    ) {
        self.metricCode = metricCode
        self.occurrence = occurrence
        self.value = value
        self.effectiveAt = effectiveAt
        self.deviceTime = deviceTime
        self.timeBasis = timeBasis
        self.skewMilliseconds = skewMilliseconds
        self.userIndex = userIndex
        self.recordSequence = recordSequence
        self.epoch = epoch
        self.lane = lane
        self.characteristic = characteristic
        self.rawBytes = rawBytes
        self.parserVersion = parserVersion
        self.receivedAt = receivedAt
    }
}
