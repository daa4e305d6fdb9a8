import DBus

/// The names docs/specs/control-api.md fixes between tetherd and its clients. Nothing else in a client may spell them.
public enum GatewayContract {
    /// control-api.md: "tetherd owns the well-known name io.tether.Gateway on the system bus".
    public static let busName = "io.tether.Gateway"
    public static let objectPath = DBusObjectPath("/io/tether/Gateway")
    public static let interface = "io.tether.Gateway1"
    /// control-api.md, Errors: "Methods fail with D-Bus errors named io.tether.Gateway1.Error.<Name>".
    public static let errorPrefix = "io.tether.Gateway1.Error."

    /// control-api.md, Pairing prompts: the caller exports this interface for the duration of `Pair`.
    public static let promptInterface = "io.tether.PairingPrompt1"
    /// The reply to `RequestConfirmation` that rejects the pairing.
    public static let promptRejected = "io.tether.PairingPrompt1.Error.Rejected"

    /// control-api.md, Settings: the settings of link protocol §7.11 and their D-Bus types, for a device whose
    /// record does not carry a setting yet (the record's own type wins when it does).
    public static let settingTypes: [String: DBusValue] = [
        "sensitivity": .uint32(0), "led_brightness": .uint32(0), "haptic_feedback": .bool(false),
        "sleep_timeout_seconds": .uint32(0), "daily_limit": .uint32(0),
    ]

    /// The outbox statuses `ListOutbox` filters by (control-api.md, Outbox command: "There is no done: the store
    /// deletes a command once the backend has it").
    public static let outboxStatuses = ["pending", "in_flight", "failed", "conflict", "dead"]
}

/// The method names of `io.tether.Gateway1`, so a typo is a compile error rather than an UnknownMethod.
public enum GatewayMethod: String, Sendable, CaseIterable {
    case getStatus = "GetStatus"
    case listDevices = "ListDevices"
    case getDevice = "GetDevice"
    case startScan = "StartScan"
    case stopScan = "StopScan"
    case listScanResults = "ListScanResults"
    case pair = "Pair"
    case forget = "Forget"
    case getSettings = "GetSettings"
    case setSettings = "SetSettings"
    case listOutbox = "ListOutbox"
    case listDeadLetters = "ListDeadLetters"
    case retryDeadLetter = "RetryDeadLetter"
    case discardDeadLetter = "DiscardDeadLetter"
    case listConflicts = "ListConflicts"
    case resolveConflict = "ResolveConflict"
    case syncNow = "SyncNow"
    case listHealthDevices = "ListHealthDevices"
    case listHealthSamples = "ListHealthSamples"
    case backfill = "Backfill"
    case listHealthProjections = "ListHealthProjections"
    case deleteHealthSample = "DeleteHealthSample"
    case correctHealthSample = "CorrectHealthSample"
    case listHealthDeletions = "ListHealthDeletions"
    case updateFirmware = "UpdateFirmware"
    case listFirmwareUpdates = "ListFirmwareUpdates"
    case firmwareCommand = "FirmwareCommand"
}

/// The signals of `io.tether.Gateway1`.
public enum GatewaySignal: String, Sendable {
    case deviceChanged = "DeviceChanged"
    case scanResult = "ScanResult"
    case syncFinished = "SyncFinished"
    case healthReading = "HealthReading"
    case firmwareProgress = "FirmwareProgress"
    case firmwareUpdateFinished = "FirmwareUpdateFinished"
}
