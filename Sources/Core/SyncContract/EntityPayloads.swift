
// The entity documents a command carries in `payload`: the full state for create and update. They are the JSON
// the gateway's outbox stores (TetherStore's `OutboxPayloads`), field for field; docs/specs/sync-api.yaml describes
// them as `DevicePayload`, `EventPayload`, `TelemetryPayload` and `SettingsPayload`.

/// A consumption event: unique by (serial, bootCounter, sequence).
public struct EventPayload: Codable, Hashable, Sendable {
    public var serial: String
    public var bootCounter: Int
    public var sequence: Int64
    public var ticks: Int64
    public var utcNanoseconds: Int64?
    public var uncertaintyNanoseconds: Int64?
    public var durationMilliseconds: Int
    public var intensity: Int
    public var receivedAt: Int64

    public init(
        serial: String, bootCounter: Int, sequence: Int64, ticks: Int64, utcNanoseconds: Int64?, uncertaintyNanoseconds: Int64?,
        durationMilliseconds: Int, intensity: Int, receivedAt: Int64
    ) {
        self.serial = serial
        self.bootCounter = bootCounter
        self.sequence = sequence
        self.ticks = ticks
        self.utcNanoseconds = utcNanoseconds
        self.uncertaintyNanoseconds = uncertaintyNanoseconds
        self.durationMilliseconds = durationMilliseconds
        self.intensity = intensity
        self.receivedAt = receivedAt
    }

    /// The rules the gateway's schema enforces, checked again on the server (§8): `nil` when valid.
    public var problem: String? {
        if !EntityIdentity.isValidSerial(serial) { return "serial must be 1 to 32 printable ASCII characters" }
        if !(0...65535).contains(bootCounter) { return "bootCounter \(bootCounter) is outside 0…65535" }
        if sequence < 0 { return "sequence must not be negative" }
        if ticks < 0 { return "ticks must not be negative" }
        if (utcNanoseconds == nil) != (uncertaintyNanoseconds == nil) { return "utcNanoseconds and uncertaintyNanoseconds come together" }
        if let uncertaintyNanoseconds, uncertaintyNanoseconds < 0 { return "uncertaintyNanoseconds must not be negative" }
        if !(0...65535).contains(durationMilliseconds) { return "durationMilliseconds \(durationMilliseconds) is outside 0…65535" }
        if !(0...100).contains(intensity) { return "intensity \(intensity) is outside 0…100" }
        return nil
    }

    // Absent times are written as null, as the gateway writes them, so documents compare byte for byte.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(serial, forKey: .serial)
        try container.encode(bootCounter, forKey: .bootCounter)
        try container.encode(sequence, forKey: .sequence)
        try container.encode(ticks, forKey: .ticks)
        try container.encode(utcNanoseconds, forKey: .utcNanoseconds)
        try container.encode(uncertaintyNanoseconds, forKey: .uncertaintyNanoseconds)
        try container.encode(durationMilliseconds, forKey: .durationMilliseconds)
        try container.encode(intensity, forKey: .intensity)
        try container.encode(receivedAt, forKey: .receivedAt)
    }
}

/// A device as the gateway knows it. Pulled device changes carry the same document.
public struct DevicePayload: Codable, Hashable, Sendable {
    public var serial: String
    public var hardwareRevision: Int?
    public var firmwareVersion: String?
    public var protocolVersion: Int?
    public var capabilities: Int
    public var pairingState: PairingState

    public init(
        serial: String, hardwareRevision: Int? = nil, firmwareVersion: String? = nil, protocolVersion: Int? = nil, capabilities: Int = 0,
        pairingState: PairingState
    ) {
        self.serial = serial
        self.hardwareRevision = hardwareRevision
        self.firmwareVersion = firmwareVersion
        self.protocolVersion = protocolVersion
        self.capabilities = capabilities
        self.pairingState = pairingState
    }

    public var problem: String? {
        if !EntityIdentity.isValidSerial(serial) { return "serial must be 1 to 32 printable ASCII characters" }
        if let hardwareRevision, !(0...255).contains(hardwareRevision) { return "hardwareRevision \(hardwareRevision) is outside 0…255" }
        if let protocolVersion, !(1...255).contains(protocolVersion) { return "protocolVersion \(protocolVersion) is outside 1…255" }
        if let firmwareVersion, firmwareVersion.isEmpty || firmwareVersion.utf8.count > 64 { return "firmwareVersion must be 1 to 64 bytes" }
        if !(0...65535).contains(capabilities) { return "capabilities \(capabilities) is outside 0…65535" }
        return nil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(serial, forKey: .serial)
        try container.encode(hardwareRevision, forKey: .hardwareRevision)
        try container.encode(firmwareVersion, forKey: .firmwareVersion)
        try container.encode(protocolVersion, forKey: .protocolVersion)
        try container.encode(capabilities, forKey: .capabilities)
        try container.encode(pairingState, forKey: .pairingState)
    }
}

/// A BATTERY_STATUS or SLEEP notice: unique by (serial, kind, receivedAt).
public struct TelemetryPayload: Codable, Hashable, Sendable {
    public var serial: String
    public var kind: TelemetryKind
    public var receivedAt: Int64
    public var millivolts: Int?
    public var percent: Int?
    public var charging: Bool?
    public var reason: Int?
    public var wakeAfterSeconds: Int64?

    public init(
        serial: String, kind: TelemetryKind, receivedAt: Int64, millivolts: Int? = nil, percent: Int? = nil, charging: Bool? = nil,
        reason: Int? = nil, wakeAfterSeconds: Int64? = nil
    ) {
        self.serial = serial
        self.kind = kind
        self.receivedAt = receivedAt
        self.millivolts = millivolts
        self.percent = percent
        self.charging = charging
        self.reason = reason
        self.wakeAfterSeconds = wakeAfterSeconds
    }

    public var problem: String? {
        if !EntityIdentity.isValidSerial(serial) { return "serial must be 1 to 32 printable ASCII characters" }
        switch kind {
        case .battery:
            guard let millivolts, let percent, charging != nil else { return "battery telemetry needs millivolts, percent and charging" }
            if !(0...65535).contains(millivolts) { return "millivolts \(millivolts) is outside 0…65535" }
            if !(0...100).contains(percent) { return "percent \(percent) is outside 0…100" }
        case .sleep:
            guard let reason else { return "sleep telemetry needs a reason" }
            if !(0...255).contains(reason) { return "reason \(reason) is outside 0…255" }
            if let wakeAfterSeconds, !(0...4_294_967_294).contains(wakeAfterSeconds) { return "wakeAfterSeconds is outside 0…4294967294" }
        }
        return nil
    }
}

/// One setting changed differently on the device and in the desired settings (TLV value bytes, §7.11).
public struct SettingConflictPayload: Codable, Hashable, Sendable {
    public var key: Int
    public var base: [UInt8]?
    public var desired: [UInt8]?
    public var reported: [UInt8]?
    public var detectedAt: Int64

    public init(key: Int, base: [UInt8]?, desired: [UInt8]?, reported: [UInt8]?, detectedAt: Int64) {
        self.key = key
        self.base = base
        self.desired = desired
        self.reported = reported
        self.detectedAt = detectedAt
    }
}

/// A device's settings as the gateway holds them: what is wanted (and by whom), what the device reported, and
/// the conflicts its three-way merge found. `desiredVersion` and `reportedVersion` are the device's own config
/// versions (§7.11), not the server's settings version (that travels as the command's `base_version`).
public struct SettingsPayload: Codable, Hashable, Sendable {
    public var serial: String
    public var desiredVersion: Int64?
    public var desired: SettingsDocument?
    public var desiredChangedBy: SettingsChangeAuthor?
    public var reportedVersion: Int64?
    public var reported: SettingsDocument?
    public var conflicts: [SettingConflictPayload]
    /// The gateway's own bookkeeping, which the server ignores: the server's settings version the desired settings
    /// build on (the push's `base_version`) and the server's desired settings at that version (the base of the
    /// three-way merge when the server answers 409).
    public var serverVersion: Int64?
    public var serverSettings: SettingsDocument?

    public init(
        serial: String, desiredVersion: Int64? = nil, desired: SettingsDocument? = nil, desiredChangedBy: SettingsChangeAuthor? = nil,
        reportedVersion: Int64? = nil, reported: SettingsDocument? = nil, conflicts: [SettingConflictPayload] = [],
        serverVersion: Int64? = nil, serverSettings: SettingsDocument? = nil
    ) {
        self.serial = serial
        self.desiredVersion = desiredVersion
        self.desired = desired
        self.desiredChangedBy = desiredChangedBy
        self.reportedVersion = reportedVersion
        self.reported = reported
        self.conflicts = conflicts
        self.serverVersion = serverVersion
        self.serverSettings = serverSettings
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serial = try container.decode(String.self, forKey: .serial)
        desiredVersion = try container.decodeIfPresent(Int64.self, forKey: .desiredVersion)
        desired = try container.decodeIfPresent(SettingsDocument.self, forKey: .desired)
        desiredChangedBy = try container.decodeIfPresent(SettingsChangeAuthor.self, forKey: .desiredChangedBy)
        reportedVersion = try container.decodeIfPresent(Int64.self, forKey: .reportedVersion)
        reported = try container.decodeIfPresent(SettingsDocument.self, forKey: .reported)
        conflicts = try container.decodeIfPresent([SettingConflictPayload].self, forKey: .conflicts) ?? []
        serverVersion = try container.decodeIfPresent(Int64.self, forKey: .serverVersion)
        serverSettings = try container.decodeIfPresent(SettingsDocument.self, forKey: .serverSettings)
    }

    public var problem: String? {
        if !EntityIdentity.isValidSerial(serial) { return "serial must be 1 to 32 printable ASCII characters" }
        if let problem = desired?.problem { return "desired: \(problem)" }
        if let problem = reported?.problem { return "reported: \(problem)" }
        if (desired == nil) != (desiredVersion == nil) { return "desired and desiredVersion come together" }
        return nil
    }
}
