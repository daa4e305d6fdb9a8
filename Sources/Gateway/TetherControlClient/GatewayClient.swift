import DBus
import ControlContract

/// A client of tetherd's control API (`io.tether.Gateway1`, docs/specs/control-api.md) on one private connection.
///
/// Each method is one call; every failure comes out as a `GatewayControlError`. The client holds no state
/// besides the connection, so commands stay thin: call, render, exit.
public final class GatewayClient: Sendable {
    public let connection: DBusConnection
    /// How long to wait for an ordinary reply. `pair` waits longer: the daemon waits up to 60 s for each prompt.
    public let callTimeout: Duration

    public init(connection: DBusConnection, callTimeout: Duration = .seconds(25)) {
        self.connection = connection
        self.callTimeout = callTimeout
    }

    /// Connects to `bus`; failures to reach the bus come out as `.busUnreachable`.
    public static func connect(to bus: DBusBusAddress, callTimeout: Duration = .seconds(25)) async throws -> GatewayClient {
        let printable = (try? bus.resolved()) ?? "\(bus)"
        do {
            return GatewayClient(connection: try await DBusConnection.connect(to: bus), callTimeout: callTimeout)
        } catch let error as DBusError {
            throw GatewayControlError.busUnreachable(address: printable, reason: error.message.isEmpty ? error.name : error.message)
        }
    }

    public func close() async {
        await connection.close()
    }

    // MARK: Reads

    public func status() async throws -> GatewayRecord {
        try record(from: try await call(.getStatus), method: .getStatus)
    }

    public func devices() async throws -> [GatewayRecord] {
        try records(from: try await call(.listDevices), method: .listDevices)
    }

    public func device(_ serialOrAddress: String) async throws -> GatewayRecord {
        try record(from: try await call(.getDevice, [.string(serialOrAddress)]), method: .getDevice)
    }

    public func scanResults() async throws -> [GatewayRecord] {
        try records(from: try await call(.listScanResults), method: .listScanResults)
    }

    public func settings(_ serial: String) async throws -> GatewayRecord {
        try record(from: try await call(.getSettings, [.string(serial)]), method: .getSettings)
    }

    /// control-api.md: `ListOutbox(s status, u limit)`, `""` = every status.
    public func outbox(status: String?, limit: UInt32) async throws -> [GatewayRecord] {
        try records(from: try await call(.listOutbox, [.string(status ?? ""), .uint32(limit)]), method: .listOutbox)
    }

    public func deadLetters(limit: UInt32) async throws -> [GatewayRecord] {
        try records(from: try await call(.listDeadLetters, [.uint32(limit)]), method: .listDeadLetters)
    }

    public func conflicts() async throws -> [GatewayRecord] {
        try records(from: try await call(.listConflicts), method: .listConflicts)
    }

    public func healthDevices() async throws -> [GatewayRecord] {
        try records(from: try await call(.listHealthDevices), method: .listHealthDevices)
    }

    /// control-api.md: `ListHealthProjections(s device)`: "" for every device.
    public func healthProjections(device: String) async throws -> [GatewayRecord] {
        let reply = try await call(.listHealthProjections, [.string(device)])
        return try records(from: reply, method: .listHealthProjections)
    }

    /// control-api.md: `ListHealthSamples(s device, a{sv} query)`: `device` "" for every health device; the query's
    /// keys as in "Health sample" (`since`, `until`, `metric`, `metric_code`, `include_deleted`, `limit`).
    public func healthSamples(device: String, query: [String: DBusValue]) async throws -> [GatewayRecord] {
        let reply = try await call(.listHealthSamples, [.string(device), .variantDictionary(query)])
        return try records(from: reply, method: .listHealthSamples)
    }

    /// control-api.md: `ListHealthDeletions(s device, u limit)`: tombstones, oldest first; "" for every device.
    public func healthDeletions(device: String, limit: UInt32) async throws -> [GatewayRecord] {
        try records(from: try await call(.listHealthDeletions, [.string(device), .uint32(limit)]), method: .listHealthDeletions)
    }

    // MARK: Changes (mutating: the bus policy admits root and the tether group only)

    /// control-api.md: `DeleteHealthSample(s uid, s note)`: the tombstone ("Health deletion").
    public func deleteHealthSample(uid: String, note: String) async throws -> GatewayRecord {
        try record(from: try await call(.deleteHealthSample, [.string(uid), .string(note)]), method: .deleteHealthSample)
    }

    /// control-api.md: `CorrectHealthSample(s uid, a{sv} correction, s note)`: the original's tombstone, naming the
    /// replacement (`replacement_uid`).
    public func correctHealthSample(uid: String, correction: [String: DBusValue], note: String) async throws -> GatewayRecord {
        let reply = try await call(.correctHealthSample, [.string(uid), .variantDictionary(correction), .string(note)])
        return try record(from: reply, method: .correctHealthSample)
    }

    public func startScan() async throws { _ = try await call(.startScan) }
    public func stopScan() async throws { _ = try await call(.stopScan) }

    /// Pairs through the daemon's agent; the daemon asks the object at `prompt` on this connection.
    public func pair(address: String, prompt: DBusObjectPath, timeout: Duration) async throws -> GatewayRecord {
        let reply = try await call(.pair, [.string(address), .objectPath(prompt)], timeout: timeout)
        return try record(from: reply, method: .pair)
    }

    public func forget(_ serialOrAddress: String) async throws {
        _ = try await call(.forget, [.string(serialOrAddress)])
    }

    /// control-api.md: "SetSettings takes only the names (no desired. prefix) of the settings to change".
    public func setSettings(_ serial: String, desired: [String: DBusValue]) async throws -> GatewayRecord {
        let reply = try await call(.setSettings, [.string(serial), .variantDictionary(desired)])
        return try record(from: reply, method: .setSettings)
    }

    /// `id` is a command UUID or `"*"` for every dead letter; returns how many were affected.
    public func retryDeadLetter(_ id: String) async throws -> UInt32 {
        try count(from: try await call(.retryDeadLetter, [.string(id)]), method: .retryDeadLetter)
    }

    public func discardDeadLetter(_ id: String) async throws -> UInt32 {
        try count(from: try await call(.discardDeadLetter, [.string(id)]), method: .discardDeadLetter)
    }

    public func resolveConflict(serial: String, key: UInt8, keep: String) async throws {
        _ = try await call(.resolveConflict, [.string(serial), .byte(key), .string(keep)])
    }

    public func syncNow() async throws { _ = try await call(.syncNow) }

    /// control-api.md: `Backfill(s device)` answers when the cold-lane procedure ended, one result per service.
    public func backfill(_ device: String, timeout: Duration) async throws -> [GatewayRecord] {
        try records(from: try await call(.backfill, [.string(device)], timeout: timeout), method: .backfill)
    }

    /// control-api.md: `UpdateFirmware(s device, h image, a{sv} options)` answers once the update is verified,
    /// journaled and its device held; `FirmwareProgress` and `FirmwareUpdateFinished` follow it. `image` is an open
    /// file the daemon reads through its descriptor (the caller keeps ownership and closes it).
    public func updateFirmware(device: String, image: OwnedFileDescriptor, options: [String: DBusValue]) async throws -> GatewayRecord {
        let reply = try await call(.updateFirmware, [.string(device), .unixFD(image), .variantDictionary(options)])
        return try record(from: reply, method: .updateFirmware)
    }

    /// The latest `limit` firmware updates tetherd made (0: its default), of one device unless `device` is empty.
    public func firmwareUpdates(device: String, limit: UInt32) async throws -> [GatewayRecord] {
        try records(from: try await call(.listFirmwareUpdates, [.string(device), .uint32(limit)]), method: .listFirmwareUpdates)
    }

    /// control-api.md: `FirmwareCommand(s device, s command, a{sv} arguments)`: one image command (list, test,
    /// confirm, reset, erase) on a device tetherd serves; its slots after the command ([] for reset). It may take a
    /// connection to the device first, hence its own `timeout`.
    public func firmwareCommand(device: String, command: String, hash: [UInt8]? = nil, timeout: Duration) async throws -> [GatewayRecord] {
        let arguments: [String: DBusValue] = hash.map { ["hash": .bytes($0)] } ?? [:]
        let reply = try await call(.firmwareCommand, [.string(device), .string(command), .variantDictionary(arguments)], timeout: timeout)
        return try records(from: reply, method: .firmwareCommand)
    }

    // MARK: Signals

    /// Subscribes to one of the daemon's signals; returns once the bus delivers them.
    public func signals(_ signal: GatewaySignal) async throws -> AsyncStream<DBusSignal> {
        do {
            return try await connection.signals(
                matching: DBusMatchRule(
                    sender: GatewayContract.busName, interface: GatewayContract.interface, member: signal.rawValue,
                    path: GatewayContract.objectPath))
        } catch let error as DBusError {
            throw GatewayControlError(error, method: signal.rawValue)
        }
    }

    /// Whether anyone owns io.tether.Gateway right now (a cheap check before long-running commands).
    public func isDaemonRunning() async throws -> Bool {
        do {
            return try await connection.nameOwner(of: GatewayContract.busName) != nil
        } catch let error as DBusError {
            throw GatewayControlError(error, method: "GetNameOwner")
        }
    }

    // MARK: Plumbing

    private func call(_ method: GatewayMethod, _ arguments: [DBusValue] = [], timeout: Duration? = nil) async throws
        -> [DBusValue]
    {
        do {
            return try await connection.call(
                destination: GatewayContract.busName, path: GatewayContract.objectPath,
                interface: GatewayContract.interface, member: method.rawValue, arguments: arguments,
                timeout: timeout ?? callTimeout)
        } catch let error as DBusError {
            throw GatewayControlError(error, method: method.rawValue)
        }
    }

    private func record(from reply: [DBusValue], method: GatewayMethod) throws -> GatewayRecord {
        guard reply.count == 1 else {
            throw GatewayControlError.unexpectedReply(method: method.rawValue, signature: Self.signature(of: reply))
        }
        return try GatewayRecord(replyValue: reply[0], method: method)
    }

    private func records(from reply: [DBusValue], method: GatewayMethod) throws -> [GatewayRecord] {
        guard reply.count == 1, let elements = reply[0].arrayElements else {
            throw GatewayControlError.unexpectedReply(method: method.rawValue, signature: Self.signature(of: reply))
        }
        return try elements.map { try GatewayRecord(replyValue: $0, method: method) }
    }

    private func count(from reply: [DBusValue], method: GatewayMethod) throws -> UInt32 {
        guard reply.count == 1, let count = reply[0].uint32Value else {
            throw GatewayControlError.unexpectedReply(method: method.rawValue, signature: Self.signature(of: reply))
        }
        return count
    }

    private static func signature(of values: [DBusValue]) -> String {
        values.map(\.signature.rawValue).joined()
    }
}
