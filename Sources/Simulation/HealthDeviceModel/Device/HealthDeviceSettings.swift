/// The kinds of standard health device the simulator offers.
public enum HealthDeviceKind: String, Codable, Hashable, Sendable, CaseIterable {
    case heartRate = "heart-rate"
    case bloodPressure = "blood-pressure"
    case glucose
    case weightScale = "weight-scale"
    case thermometer
    case pulseOximeter = "pulse-oximeter"
    case cgm
}

/// A person registered on a multi-user device (User Data Service v1.0: user index 0...0xFE, consent code
/// 0...9999).
public struct HealthUser: Codable, Hashable, Sendable {
    public var index: UInt8
    public var consentCode: UInt16

    public init(index: UInt8, consentCode: UInt16) {
        self.index = index
        self.consentCode = consentCode
    }
}

/// A special value (IEEE 11073-20601 Annex F.8) in place of the main value of the `measurement`-th measurement the
/// device takes (1-based, counting the stored history first).
public struct SpecialValueFault: Codable, Hashable, Sendable {
    public var measurement: Int
    public var value: MedicalFloatSpecial

    public init(measurement: Int, value: MedicalFloatSpecial) {
        self.measurement = measurement
        self.value = value
    }
}

/// Faults a health device can be configured with (also injected at run time through io.tether.Simulator1).
public struct HealthFaults: Codable, Hashable, Sendable {
    public var racp = RACPServer.Faults()
    public var specialValues: [SpecialValueFault] = []
    /// The device has been reset and forgot its bond: a central holding keys for it fails to encrypt until it
    /// removes the device and pairs again.
    public var bondForgotten = false

    public init() {}
}

/// One health device's parameters. Every field has a default, so a JSON configuration names only what it changes.
public struct HealthDeviceSettings: Codable, Hashable, Sendable {
    public var kind: HealthDeviceKind
    public var seed: UInt64 = 1
    /// Records in memory at power-on (glucose, PLX spot-check, CGM through RACP; cuff, thermometer and scale send
    /// them when indications are enabled).
    public var storedRecords = 0
    public var firstSequenceNumber: UInt16 = 1
    /// When the stored history starts, in seconds since 1970-01-01 UTC (nil: `storedRecords` intervals before
    /// power-on). Set, the device's memory is the same at every power-on, with `storedRecords` of the same
    /// readings (same times, values and sequence numbers, from the same seed), which is how a meter's memory
    /// outlives a gateway whose simulator restarts: the power-cut rig powers the simulator on again with more
    /// records each boot. A record that would fall after power-on is not taken.
    public var historyStartsAt: Int64?
    /// Spacing of the stored history and of live measurements (heart rate, PLX continuous, CGM, intermediate
    /// temperature).
    public var measurementIntervalSeconds: Double = 60
    /// false: the device's clock was never set; it counts from 2000-01-01T00:00:00 at power-on, as meters with a
    /// flat clock battery do, until a client writes Current Time.
    public var clockSet = true
    /// With `clockSet` false: the clock reports its date as "not known" (year, month and day 0, GATT Specification
    /// Supplement, Date Time) in Current Time and in every stamp, as devices that know their clock was never set do,
    /// instead of counting from 2000-01-01. A written Current Time sets it as any.
    public var unsetClockReportsUnknownDate = false
    /// How far the device's clock runs ahead (positive) or behind the true time, in seconds.
    public var clockSkewSeconds: Int64 = 0
    /// Multi-user scale: the registered users (UDS consent by index and code).
    public var users: [HealthUser] = []
    /// CGM: E2E-CRC supported (CGM Feature bit 12) and appended to every value.
    public var e2eCRC = true
    /// Glucose: every how many records carry a Glucose Context (0 = none).
    public var contextEvery = 2
    public var faults = HealthFaults()

    public init(kind: HealthDeviceKind) { self.kind = kind }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(HealthDeviceKind.self, forKey: .kind)
        seed = try container.decodeIfPresent(UInt64.self, forKey: .seed) ?? seed
        storedRecords = try container.decodeIfPresent(Int.self, forKey: .storedRecords) ?? storedRecords
        firstSequenceNumber = try container.decodeIfPresent(UInt16.self, forKey: .firstSequenceNumber) ?? firstSequenceNumber
        historyStartsAt = try container.decodeIfPresent(Int64.self, forKey: .historyStartsAt)
        measurementIntervalSeconds =
            try container.decodeIfPresent(Double.self, forKey: .measurementIntervalSeconds) ?? measurementIntervalSeconds
        clockSet = try container.decodeIfPresent(Bool.self, forKey: .clockSet) ?? clockSet
        clockSkewSeconds = try container.decodeIfPresent(Int64.self, forKey: .clockSkewSeconds) ?? clockSkewSeconds
        unsetClockReportsUnknownDate =
            try container.decodeIfPresent(Bool.self, forKey: .unsetClockReportsUnknownDate) ?? unsetClockReportsUnknownDate
        users = try container.decodeIfPresent([HealthUser].self, forKey: .users) ?? users
        e2eCRC = try container.decodeIfPresent(Bool.self, forKey: .e2eCRC) ?? e2eCRC
        contextEvery = try container.decodeIfPresent(Int.self, forKey: .contextEvery) ?? contextEvery
        faults = try container.decodeIfPresent(HealthFaults.self, forKey: .faults) ?? faults
    }
}

extension HealthFaults {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        racp = try container.decodeIfPresent(RACPServer.Faults.self, forKey: .racp) ?? racp
        specialValues = try container.decodeIfPresent([SpecialValueFault].self, forKey: .specialValues) ?? []
        bondForgotten = try container.decodeIfPresent(Bool.self, forKey: .bondForgotten) ?? false
    }
}
