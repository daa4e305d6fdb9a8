import DBus
import LinkProtocol

/// What the control API asks of the parts that talk to BlueZ. The device-session service implements it; a
/// daemon running without Bluetooth has none, and these methods then fail with `Unavailable`.
public protocol DeviceControl: Sendable {
    /// Starts discovery on behalf of `owner` (a caller's unique bus name); results arrive as `ScanResult` signals.
    func startScan(owner: String) async throws
    func stopScan(owner: String) async throws
    func scanResults() async -> [ScanResult]
    /// Pairs through tetherd's BlueZ agent, asking `prompt` whenever BlueZ asks the agent.
    func pair(address: String, prompt: PairingPromptClient) async throws
    /// Disconnects and removes the device from BlueZ; the store's pairing state is the control API's part.
    func forget(address: String) async throws
    /// A technician changed desired settings: send them to the device if it is connected.
    func desiredSettingsChanged(serial: String, config: DeviceConfig) async
}

/// One device seen while scanning (docs/control-api.md, "Scan result").
public struct ScanResult: Hashable, Sendable {
    public var address: String
    public var name: String?
    public var rssi: Int16?
    public var known: Bool
    public var paired: Bool
    public var lastSeenAt: Int64

    public init(address: String, name: String?, rssi: Int16?, known: Bool, paired: Bool, lastSeenAt: Int64) {
        self.address = address
        self.name = name
        self.rssi = rssi
        self.known = known
        self.paired = paired
        self.lastSeenAt = lastSeenAt
    }
}

/// What the control API asks of the sync engine.
public protocol SyncControl: Sendable {
    /// Runs a sync now (or joins the one running) and returns its summary.
    func syncNow() async -> SyncRunSummary
    /// Local data changed (a technician's settings, a retried dead letter): sync soon.
    func localWrite()
}

/// The `SyncFinished` signal's fields.
public struct SyncRunSummary: Hashable, Sendable {
    public var result: String
    public var pushed: Int
    public var pulled: Int
    public var dead: Int
    public var conflicts: Int
    public var error: String?

    public init(result: String, pushed: Int = 0, pulled: Int = 0, dead: Int = 0, conflicts: Int = 0, error: String? = nil) {
        self.result = result
        self.pushed = pushed
        self.pulled = pulled
        self.dead = dead
        self.conflicts = conflicts
        self.error = error
    }
}
