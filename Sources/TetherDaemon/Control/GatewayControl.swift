import DBus
import Foundation
import LinkProtocol
import Logging
import TetherStore

/// The io.tether.Gateway1 methods (docs/control-api.md), each a function from arguments to reply values or a
/// `DBusError` from `ControlError`. Access control is the bus policy's job, not this type's.
public final class GatewayControl: Sendable {
    public static let version = "0.6.0"

    let store: StoreQueries
    let state: DaemonState
    let devices: (any DeviceControl)?
    let sync: (any SyncControl)?
    let logger: Logger

    public init(store: StoreQueries, state: DaemonState, devices: (any DeviceControl)?, sync: (any SyncControl)?, logger: Logger) {
        self.store = store
        self.state = state
        self.devices = devices
        self.sync = sync
        self.logger = logger
    }

    // MARK: Status and devices

    func getStatus() throws(DBusError) -> DBusValue {
        let summary = try storeCall { () throws(StoreError) in try store.summary() }
        return ControlRecords.status(summary: summary, state: state.snapshot, version: Self.version)
    }

    func listDevices() throws(DBusError) -> DBusValue {
        let records = try storeCall { () throws(StoreError) in try store.registry.devices() }
        let live = state.snapshot.devices
        var seenAddresses = Set<String>()
        var result: [DBusValue] = []
        for record in records {
            let liveDevice = record.address.flatMap { live[$0] } ?? live.values.first { $0.serial == record.serial }
            if let address = liveDevice?.address { seenAddresses.insert(address) }
            let events = try storeCall { () throws(StoreError) in try store.consumption.eventCount(serial: record.serial) }
            result.append(ControlRecords.device(record: record, live: liveDevice, eventsStored: events))
        }
        // Devices on a link that have not said who they are yet (no DEVICE_INFO stored).
        for device in live.values.sorted(by: { $0.address < $1.address }) where !seenAddresses.contains(device.address) {
            result.append(ControlRecords.device(record: nil, live: device, eventsStored: nil))
        }
        return ControlRecords.list(result)
    }

    func getDevice(_ identifier: String) throws(DBusError) -> DBusValue {
        let live = state.snapshot.devices
        guard let record = try storeCall({ () throws(StoreError) in try store.device(serialOrAddress: identifier) }) else {
            if let device = live[identifier.uppercased()] {
                return ControlRecords.device(record: nil, live: device, eventsStored: nil)
            }
            throw ControlError.unknownDevice(identifier)
        }
        let liveDevice = record.address.flatMap { live[$0] } ?? live.values.first { $0.serial == record.serial }
        let events = try storeCall { () throws(StoreError) in try store.consumption.eventCount(serial: record.serial) }
        return ControlRecords.device(record: record, live: liveDevice, eventsStored: events)
    }

    // MARK: Scanning, pairing, forgetting (need BlueZ)

    private func requireDevices() throws(DBusError) -> any DeviceControl {
        guard let devices else {
            throw ControlError.unavailable("tetherd runs without its Bluetooth session; check `journalctl -u tetherd` and that bluetoothd is running")
        }
        return devices
    }

    func startScan(caller: String) async throws -> [DBusValue] {
        try await requireDevices().startScan(owner: caller)
        return []
    }

    func stopScan(caller: String) async throws -> [DBusValue] {
        try await requireDevices().stopScan(owner: caller)
        return []
    }

    func listScanResults() async throws -> DBusValue {
        let results = await (try requireDevices()).scanResults()
        return ControlRecords.list(results.map(ControlRecords.scanResult))
    }

    func pair(address: String, prompt: PairingPromptClient) async throws -> DBusValue {
        let normalized = try Self.address(address)
        try await requireDevices().pair(address: normalized, prompt: prompt)
        return try getDevice(normalized)
    }

    func forget(_ identifier: String) async throws {
        guard let record = try storeCall({ () throws(StoreError) in try store.device(serialOrAddress: identifier) }) else {
            throw ControlError.unknownDevice(identifier)
        }
        if let address = record.address, let devices {
            try await devices.forget(address: address)
        }
        var random = SystemRandomNumberGenerator()
        try storeCall { () throws(StoreError) in
            try store.registry.setPairingState(.unpaired, serial: record.serial, at: store.now, using: &random)
        }
        sync?.localWrite()
        logger.notice("device forgotten", metadata: ["serial": "\(record.serial)"])
    }

    // MARK: Settings

    func getSettings(_ serial: String) throws(DBusError) -> DBusValue {
        guard try storeCall({ () throws(StoreError) in try store.registry.device(serial: serial) }) != nil else {
            throw ControlError.unknownDevice(serial)
        }
        let record = try storeCall { () throws(StoreError) in try store.settings.settings(serial: serial) }
        return ControlRecords.settings(serial: serial, record: record)
    }

    func setSettings(_ serial: String, _ requested: [String: DBusValue]) async throws -> DBusValue {
        guard try storeCall({ () throws(StoreError) in try store.registry.device(serial: serial) }) != nil else {
            throw ControlError.unknownDevice(serial)
        }
        guard !requested.isEmpty else { throw ControlError.invalidArgument("SetSettings needs at least one setting to change") }
        let settings = try SettingFields.parse(requested)
        var random = SystemRandomNumberGenerator()
        let change = try storeCall { () throws(StoreError) in
            try store.settings.changeDesired(serial: serial, to: settings, by: .technician, at: store.now, using: &random)
        }
        logger.notice("desired settings changed by a technician", metadata: [
            "serial": "\(serial)", "settings": "\(requested.keys.sorted().joined(separator: ","))",
        ])
        if let config = change.configToApply { await devices?.desiredSettingsChanged(serial: serial, config: config) }
        sync?.localWrite()
        return ControlRecords.settings(serial: serial, record: change.record)
    }

    // MARK: Outbox

    func listOutbox(status: String, limit: UInt32) throws(DBusError) -> DBusValue {
        let filter: OutboxCommandRecord.Status?
        if status.isEmpty {
            filter = nil
        } else if let match = ControlRecords.statusNames.first(where: { $0.value == status })?.key {
            filter = match
        } else {
            let names = ControlRecords.statusNames.values.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            throw ControlError.invalidArgument("Unknown outbox status \"\(status)\"; use \"\" (all) or one of \(names)")
        }
        let commands = try storeCall { () throws(StoreError) in try store.outbox.commands(status: filter, limit: Self.limit(limit)) }
        return ControlRecords.list(commands.map(ControlRecords.outboxCommand))
    }

    func listDeadLetters(limit: UInt32) throws(DBusError) -> DBusValue {
        try listOutbox(status: "dead", limit: limit)
    }

    /// `"*"` acts on every dead letter; otherwise `identifier` is one command's UUID.
    func retryDeadLetter(_ identifier: String) throws(DBusError) -> UInt32 {
        let count = try actOnDeadLetters(identifier) { id throws(StoreError) in try store.outbox.retry(id: id, now: store.now) }
        if count > 0 { sync?.localWrite() }
        logger.notice("dead letters put back in line", metadata: ["count": "\(count)"])
        return count
    }

    func discardDeadLetter(_ identifier: String) throws(DBusError) -> UInt32 {
        let count = try actOnDeadLetters(identifier) { id throws(StoreError) in try store.outbox.discard(id: id) }
        logger.notice("dead letters discarded", metadata: ["count": "\(count)"])
        return count
    }

    private func actOnDeadLetters(_ identifier: String, _ action: (UUID) throws(StoreError) -> Void) throws(DBusError) -> UInt32 {
        let ids: [UUID]
        if identifier == "*" {
            ids = try storeCall { () throws(StoreError) in try store.outbox.commands(status: .deadLetter, limit: Int.max) }.map(\.id)
        } else {
            guard let id = UUID(uuidString: identifier) else {
                throw ControlError.invalidArgument("\"\(identifier)\" is not a command id (a UUID) or \"*\"")
            }
            let commands = try storeCall { () throws(StoreError) in try store.outbox.commands(status: .deadLetter, limit: Int.max) }
            guard commands.contains(where: { $0.id == id }) else {
                throw ControlError.invalidArgument("No dead letter with id \(identifier); `tether dead-letters` lists them")
            }
            ids = [id]
        }
        for id in ids { try storeCall { () throws(StoreError) in try action(id) } }
        return UInt32(clamping: ids.count)
    }

    // MARK: Conflicts

    func listConflicts() throws(DBusError) -> DBusValue {
        let devices = try storeCall { () throws(StoreError) in try store.settings.conflicts() }
        return ControlRecords.list(devices.flatMap { device in
            device.conflicts.map { ControlRecords.conflict(serial: device.serial, $0) }
        })
    }

    func resolveConflict(serial: String, key: UInt8, keep: String) async throws {
        let choice: DeviceSettingsService.ConflictChoice
        switch keep {
        case "mine": choice = .desired
        case "theirs": choice = .reported
        default: throw ControlError.invalidArgument("keep must be \"mine\" (the desired value) or \"theirs\" (the device's value), not \"\(keep)\"")
        }
        guard try storeCall({ () throws(StoreError) in try store.registry.device(serial: serial) }) != nil else {
            throw ControlError.unknownDevice(serial)
        }
        var random = SystemRandomNumberGenerator()
        let change = try storeCall { () throws(StoreError) in
            try store.settings.resolveConflict(serial: serial, key: key, keep: choice, by: .technician, at: store.now, using: &random)
        }
        if let config = change.configToApply { await devices?.desiredSettingsChanged(serial: serial, config: config) }
        sync?.localWrite()
    }

    // MARK: Sync

    func syncNow() async throws -> SyncRunSummary {
        guard let sync else {
            throw ControlError.unavailable("Sync is not configured: set [sync] server_url in /etc/tether/tether.toml")
        }
        return await sync.syncNow()
    }

    // MARK: Helpers

    static func limit(_ requested: UInt32) -> Int {
        requested == 0 ? 100 : min(Int(requested), 10_000)
    }

    /// BLE addresses as BlueZ writes them: six upper-case hex pairs separated by colons.
    static func address(_ text: String) throws(DBusError) -> String {
        let upper = text.uppercased()
        let parts = upper.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) else {
            throw ControlError.invalidArgument("\"\(text)\" is not a Bluetooth address like C0:54:45:00:00:01")
        }
        return upper
    }

    func storeCall<T>(_ body: () throws(StoreError) -> T) throws(DBusError) -> T {
        do {
            return try body()
        } catch {
            if error.code == .notFound { throw ControlError.invalidArgument(error.reason) }
            throw ControlError.from(error)
        }
    }
}
