import BlueZ
import DBus
import Foundation
import LinkProtocol
import TetherStore

/// A minimal Tether gateway on real BlueZ, standing in for `tetherd` until the daemon exists: discovery, passkey
/// pairing through an Agent1, connect, subscribe (AcquireNotify on odd connections, StartNotify on even ones, so
/// both paths run against real bluetoothd), the link session with ACK after commit, and reconnection after the
/// device power-cycles. Every wait is bounded.
public actor Central {
    public let configuration: CentralConfiguration
    private let connection: DBusConnection
    private let bluez: BlueZSession
    private let adapter: Adapter
    private let tree: BlueZObjectTree
    private let database: GatewayDatabase
    private let driver: LinkDriver
    private let passkeys: FixedPasskey
    private var connections: [ConnectionRecord] = []

    struct ConnectionRecord: Codable {
        var number: Int
        var method: String
        var mtu: Int
        var paired: Bool
        var endedBy: String
    }

    public init(configuration: CentralConfiguration, connection: DBusConnection) throws {
        self.configuration = configuration
        self.connection = connection
        bluez = BlueZSession(connection: connection)
        adapter = Adapter(session: bluez, path: DBusObjectPath(configuration.adapter))
        tree = BlueZObjectTree(session: bluez)
        database = try GatewayDatabase(path: configuration.databasePath)
        driver = LinkDriver(database: database, desiredConfig: configuration.desiredConfig)
        passkeys = FixedPasskey(passkey: configuration.passkey)
    }

    /// Runs until `expectedHits` are stored and the device reported the desired settings; throws on timeout.
    public func run() async throws {
        let treeTask = Task { try await tree.run() }
        defer { treeTask.cancel() }
        try await adapter.powerOn()
        // Outgoing pairing asks the caller's agent; the peripheral in the same bluetoothd keeps the default.
        let agent = try await Agent.register(
            session: bluez, path: "/io/tether/central/agent", capability: .keyboardOnly, makeDefault: false,
            delegate: passkeys)
        defer { Task { [agent] in try? await agent.unregister() } }

        let deadline = ContinuousClock.now + configuration.deadline
        var number = 0
        while !(await isDone()) {
            guard ContinuousClock.now < deadline else { throw CentralError.timedOut(await status()) }
            number += 1
            do {
                try await connectAndServe(number: number, deadline: deadline)
            } catch let error as CentralError {
                throw error
            } catch {
                // A failed attempt (the device is rebooting, a connect abort): try again after a pause.
                Log.info("connection \(number) attempt failed: \(error)")
                try await Task.sleep(for: .seconds(1))
            }
        }
        try await writeSummary()
    }

    // MARK: - One connection

    private func connectAndServe(number: Int, deadline: ContinuousClock.Instant) async throws {
        let device = try await discover()
        let properties = try await device.properties()
        var pairedNow = false
        if configuration.passkey != nil && !properties.paired {
            Log.info("pairing \(device.path.rawValue) with the passkey")
            try await device.pair(timeout: .seconds(60))
            try await device.setTrusted(true)
            pairedNow = true
        } else {
            Log.info("connecting \(device.path.rawValue)")
            try await device.connect(timeout: .seconds(30))
        }
        try await device.waitUntilServicesResolved(timeout: .seconds(30))
        guard let tx = await characteristic(configuration.txUUID, of: device.path),
            let rx = await characteristic(configuration.rxUUID, of: device.path)
        else {
            // A device still booting can accept the link before its GATT service is back: let go and retry.
            try? await device.disconnect()
            throw ConnectionAttemptError.serviceNotYetAvailable(device.path.rawValue)
        }

        // §2.2: subscribe before HELLO. Odd connections take AcquireNotify, even ones StartNotify.
        let useAcquire = number % 2 == 1
        let values: NotificationBatches
        let mtu: Int
        // The acquisition closes its socket when released: keep it for the whole connection.
        var acquisition: NotifyAcquisition?
        defer { acquisition?.close() }
        if useAcquire {
            acquisition = try await tx.acquireNotify()
            mtu = acquisition!.mtu
            values = acquisition!.packets
        } else {
            values = try await tx.startNotify()
            mtu = try await tx.mtu()
        }
        Log.info("connection \(number): \(useAcquire ? "AcquireNotify" : "StartNotify"), MTU \(mtu)")
        var record = ConnectionRecord(number: number, method: useAcquire ? "AcquireNotify" : "StartNotify", mtu: mtu, paired: pairedNow, endedBy: "")

        // The link's end, however BlueZ reports it: the notification stream may not finish on its own (a StartNotify
        // stream ends on Notifying=false, which a disconnect need not announce), so Device1 is watched too.
        let deviceChanges = try await bluez.propertyChanges(device.path, BlueZInterfaceName.device)
        let progress = await driver.progressEvents()
        await driver.connected(
            mtu: mtu,
            write: { value in try await rx.writeValue(value, type: .command, timeout: .seconds(10)) },
            disconnect: { try? await device.disconnect() })

        // Serve until the link ends (the value stream finishes) or everything expected is stored.
        let linkEnded = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await batch in values {
                    for value in batch { await self.driver.received(value) }
                }
                return true
            }
            group.addTask {
                for await change in deviceChanges
                where change.changed["Connected"] == .bool(false) || change.changed["ServicesResolved"] == .bool(false) {
                    return true
                }
                return true
            }
            group.addTask {
                for await _ in progress {
                    if await self.isDone() { return false }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return false
            }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
        await driver.disconnected()
        if linkEnded {
            record.endedBy = "device"
            Log.info("connection \(number): the link ended")
        } else {
            record.endedBy = "central"
            try? await device.disconnect()
            Log.info("connection \(number): done, disconnected")
        }
        connections.append(record)
    }

    /// Finds the Tether device on our adapter: already known (bonded), or by scanning for its service UUID.
    private func discover() async throws -> Device {
        let prefix = configuration.adapter + "/dev_"
        let wanted = configuration.serviceUUID.lowercased()
        func match(_ devices: [DBusObjectPath: [String: DBusValue]]) -> DBusObjectPath? {
            devices.first { path, properties in
                path.rawValue.hasPrefix(prefix)
                    && (properties["UUIDs"]?.stringsValue ?? []).contains { $0.lowercased() == wanted }
            }?.key
        }
        let events = await tree.events()
        if let known = match(await tree.devices) { return Device(session: bluez, path: known) }
        try await adapter.setDiscoveryFilter(DiscoveryFilter(uuids: [configuration.serviceUUID], transport: .le))
        try await adapter.startDiscovery()
        defer { Task { try? await adapter.stopDiscovery() } }
        Log.info("scanning on \(configuration.adapter)")
        let found = try await withThrowingTaskGroup(of: DBusObjectPath?.self) { group in
            group.addTask {
                for await _ in events {
                    if let path = match(await self.tree.devices) { return path }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(60))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        guard let found else { throw CentralError.deviceNotFound(configuration.adapter) }
        Log.info("found \(found.rawValue)")
        return Device(session: bluez, path: found)
    }

    private func characteristic(_ uuid: String, of device: DBusObjectPath) async -> GattCharacteristic? {
        await tree.characteristic(uuid: uuid, of: device).map { GattCharacteristic(session: bluez, path: $0) }
    }

    // MARK: - Done and the summary

    /// All expected hits stored, the device holds the desired settings, and every stored hit has its wall-clock
    /// time (the current boot's time sync has produced an anchor, §9.7).
    private func isDone() async -> Bool {
        guard await driver.storedHits >= configuration.expectedHits else { return false }
        guard await driver.reportedConfig == configuration.desiredConfig else { return false }
        return (try? database.contents().events.allSatisfy { $0.utcNanoseconds != nil }) ?? false
    }

    private func status() async -> String {
        "stored \(await driver.storedHits) of \(configuration.expectedHits) hits; device settings version "
            + "\(await driver.reportedConfig.map { String($0.version) } ?? "unknown"), wanted \(configuration.desiredConfig.version)"
    }

    private func writeSummary() async throws {
        let contents = try database.contents()
        let events = contents.events.map { event in
            StoredEvent(boot: Int(event.bootCounter), sequence: Int(event.sequence), ticks: Int(event.ticks),
                        duration: Int(event.durationMilliseconds), intensity: Int(event.intensity),
                        hasTime: event.utcNanoseconds != nil)
        }
        let summary = Summary(
            storedHits: await driver.storedHits, duplicateHits: await driver.duplicateHits, anchors: await driver.anchors,
            events: events, connections: connections, agentQuestions: await passkeys.questions,
            reportedConfigVersion: await driver.reportedConfig.map { Int($0.version) },
            serial: await driver.deviceInfo?.serial, sessionReports: await driver.reports,
            outboxCommands: contents.outbox.count)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(summary).write(to: URL(fileURLWithPath: configuration.summaryPath))
        Log.info("done: \(await status())")
    }

    struct StoredEvent: Codable {
        var boot: Int
        var sequence: Int
        var ticks: Int
        var duration: Int
        var intensity: Int
        var hasTime: Bool
    }

    struct Summary: Codable {
        var storedHits: Int
        var duplicateHits: Int
        var anchors: Int
        var events: [StoredEvent]
        var connections: [ConnectionRecord]
        var agentQuestions: [String]
        var reportedConfigVersion: Int?
        var serial: String?
        var sessionReports: [String]
        var outboxCommands: Int
    }
}

/// Why one connection attempt failed in a way the next attempt may not.
enum ConnectionAttemptError: Error, CustomStringConvertible {
    case serviceNotYetAvailable(String)

    var description: String {
        switch self {
        case .serviceNotYetAvailable(let device): "\(device) resolved its services without Tether's (still booting?)"
        }
    }
}

public enum CentralError: Error, CustomStringConvertible {
    case timedOut(String)
    case deviceNotFound(String)

    public var description: String {
        switch self {
        case .timedOut(let status): "timed out: \(status)"
        case .deviceNotFound(let adapter): "no Tether device advertised to \(adapter) within 60 s"
        }
    }
}
