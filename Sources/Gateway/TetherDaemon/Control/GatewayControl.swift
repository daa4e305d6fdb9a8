import DBus
import Foundation
import LinkProtocol
import Logging
import TetherGateway
import TetherStore
import TetherSync

/// The io.tether.Gateway1 methods (docs/specs/control-api.md), each a function from arguments to reply values or a
/// `DBusError` from `ControlError`. Access control is the bus policy's job, not this type's.
public final class GatewayControl: Sendable {
    public static let version = "0.6.0"

    let store: StoreQueries
    let state: DaemonState
    let gateway: Gateway?
    let sync: SyncService<ContinuousClock>?
    let logger: Logger
    /// Firmware updates (nil without the gateway's Bluetooth session).
    let firmware: FirmwareUpdates?

    init(
        store: StoreQueries, state: DaemonState, gateway: Gateway?, sync: SyncService<ContinuousClock>?, logger: Logger,
        firmware: FirmwareUpdates? = nil
    ) {
        self.store = store
        self.state = state
        self.gateway = gateway
        self.sync = sync
        self.logger = logger
        self.firmware = firmware
    }

    // MARK: Firmware updates

    func updateFirmware(device: String, image: OwnedFileDescriptor, options: [String: DBusValue]) async throws -> DBusValue {
        try await requireFirmware().start(device: device, image: image, options: options)
    }

    func listFirmwareUpdates(device: String, limit: UInt32) throws -> DBusValue {
        try requireFirmware().list(device: device, limit: limit)
    }

    func firmwareCommand(device: String, command: String, arguments: [String: DBusValue]) async throws -> DBusValue {
        try await requireFirmware().command(device: device, command: command, arguments: arguments)
    }

    private func requireFirmware() throws(DBusError) -> FirmwareUpdates {
        guard let firmware else {
            throw ControlError.unavailable("tetherd runs without its Bluetooth session; firmware updates need it")
        }
        return firmware
    }

    // MARK: Status and devices

    func getStatus() async throws -> DBusValue {
        let summary = try storeCall { () throws(StoreError) in try store.summary() }
        let gatewayStatus = await gateway?.status()
        let snapshot = state.snapshot
        return ControlRecords.status(
            summary: summary, gateway: gatewayStatus, sync: sync?.status, startedAt: snapshot.startedAt,
            adapter: configuredAdapter, version: Self.version)
    }

    var configuredAdapter: String { state.snapshot.adapter }

    func listDevices() async throws -> DBusValue {
        let records = try storeCall { () throws(StoreError) in try store.registry.devices() }
        let live = await gateway?.devices() ?? []
        var result: [DBusValue] = []
        var listedSerials = Set<String>()
        for device in live {
            let record = records.first { $0.address == device.address || (device.serial != nil && $0.serial == device.serial) }
            if let serial = record?.serial ?? device.serial { listedSerials.insert(serial) }
            result.append(
                ControlRecords.device(
                    gateway: device, record: record, eventsStored: try eventsStored(record?.serial ?? device.serial),
                    runningImage: try runningImage(device.address)))
        }
        // Devices the store knows that the gateway does not supervise (never adopted, forgotten, or no BlueZ).
        for record in records where !listedSerials.contains(record.serial) {
            result.append(ControlRecords.device(gateway: nil, record: record, eventsStored: try eventsStored(record.serial), runningImage: try runningImage(record.address)))
        }
        return ControlRecords.list(result)
    }

    func getDevice(_ identifier: String) async throws -> DBusValue {
        let record = try storeCall { () throws(StoreError) in try store.device(serialOrAddress: identifier) }
        var live = await gateway?.device(identifier)
        if live == nil, let address = record?.address { live = await gateway?.device(address) }
        guard live != nil || record != nil else { throw ControlError.unknownDevice(identifier) }
        return ControlRecords.device(
            gateway: live, record: record, eventsStored: try eventsStored(record?.serial ?? live?.serial),
            runningImage: try runningImage(live?.address ?? record?.address))
    }

    /// The image tetherd's latest update left the device at `address` running (the peripheral registry's).
    private func runningImage(_ address: String?) throws(DBusError) -> PeripheralRecord.RunningImage? {
        guard let address else { return nil }
        return try storeCall { () throws(StoreError) in try PeripheralRegistry(database: store.database).peripheral(identityAddress: address)?.runningImage }
    }

    private func eventsStored(_ serial: String?) throws(DBusError) -> Int? {
        guard let serial else { return nil }
        return try storeCall { () throws(StoreError) in try store.consumption.eventCount(serial: serial) }
    }

    // MARK: Scanning, pairing, forgetting (need BlueZ)

    private func requireGateway() throws(DBusError) -> Gateway {
        guard let gateway else {
            throw ControlError.unavailable("tetherd runs without its Bluetooth session; check `journalctl -u tetherd` and that bluetoothd is running")
        }
        return gateway
    }

    /// The gateway once it has read BlueZ's objects and settled its pairing agent (the gateway reports itself
    /// available only then, so a `Pair` after this wait finds the agent), waiting a little for a daemon that has
    /// just started (a `tether pair` right after `systemctl start` should not fail for that); after `bound` the
    /// gateway answers for itself (`Unavailable` while BlueZ is absent, or with the reason BlueZ refused the agent).
    private func readyGateway(bound: Duration = .seconds(5)) async throws -> Gateway {
        let gateway = try requireGateway()
        // Polled: `Gateway.waitUntilReady()` cannot be cancelled, and BlueZ may never come.
        let deadline = ContinuousClock.now + bound
        while !(await gateway.status().bluezAvailable), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        return gateway
    }

    func startScan() async throws {
        try await gatewayCall { try await readyGateway().startScan() }
    }

    func stopScan() async throws {
        try await gatewayCall { try await requireGateway().stopScan() }
    }

    func listScanResults() async throws -> DBusValue {
        let results = await (try requireGateway()).scanResults()
        return ControlRecords.list(results.map(ControlRecords.scanResult))
    }

    func pair(address: String, prompt: PairingPromptClient) async throws -> DBusValue {
        let normalized = try Self.address(address)
        let gateway = try await readyGateway()
        let forwarder = PairingPromptForwarder(prompt: prompt)
        do {
            let device = try await gateway.pair(address: normalized, delegate: forwarder)
            logger.notice("device paired", metadata: ["address": "\(normalized)"])
            let record = try storeCall { () throws(StoreError) in try store.device(serialOrAddress: normalized) }
            return ControlRecords.device(
                gateway: device, record: record, eventsStored: try eventsStored(record?.serial ?? device.serial),
                runningImage: try runningImage(normalized))
        } catch {
            // The caller not answering is the reason, whatever BlueZ made of the rejected request.
            if let promptFailure = forwarder.promptFailure { throw promptFailure }
            throw Self.map(error)
        }
    }

    func forget(_ identifier: String) async throws {
        let record = try storeCall { () throws(StoreError) in try store.device(serialOrAddress: identifier) }
        var forgotten = false
        if let gateway {
            do {
                // The gateway disconnects it, removes it from BlueZ and marks it unpaired in the registry.
                try await gateway.forget(record?.address ?? identifier)
                forgotten = true
            } catch GatewayError.unknownDevice {
                // Not supervised by the gateway (never adopted, or no address yet): the store's part is all there is.
            } catch {
                throw Self.map(error)
            }
        }
        if let record {
            var random = SystemRandomNumberGenerator()
            try storeCall { () throws(StoreError) in
                try store.registry.setPairingState(.unpaired, serial: record.serial, at: store.now, using: &random)
            }
            forgotten = true
        }
        guard forgotten else { throw ControlError.unknownDevice(identifier) }
        sync?.localWrite()
        logger.notice("device forgotten", metadata: ["device": "\(record?.serial ?? identifier)"])
    }

    private func gatewayCall<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw Self.map(error) }
    }

    /// The gateway's errors are one case per control-API error (TetherGateway's GatewayError).
    static func map(_ error: any Error) -> any Error {
        guard let error = error as? GatewayError else { return error }
        return DBusError(name: ControlError.prefix + error.name, message: error.description)
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
        if change.configToApply != nil { try? await gateway?.desiredSettingsChanged(serial: serial) }
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
        if change.configToApply != nil { try? await gateway?.desiredSettingsChanged(serial: serial) }
        sync?.localWrite()
    }

    // MARK: Sync

    func syncNow() async throws {
        guard let sync else {
            throw ControlError.unavailable("Sync is not configured: set [sync] server_url in /etc/tether/tether.toml")
        }
        let report = await sync.syncNow()
        if let failure = report.failure {
            throw ControlError.unavailable("The sync failed: \(failure.description); the outbox keeps everything for the next try")
        }
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
