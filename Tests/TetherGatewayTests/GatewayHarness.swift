import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import LinkProtocol
import Synchronization
import TetherGateway
import TetherStore
import Testing
import TetherTestSupport

/// A gateway on a private bus with tether-sim: a real dbus-daemon, the simulator's firmware, a real SQLite file.
struct GatewayHarness {
    let simulated: SimulatedBlueZ
    let gateway: Gateway
    let storage: GatewayStorage
    let directory: URL
    let trace: TraceRecorder
    private let running: Task<Void, any Error>

    /// `count` just-works devices (so pairing needs no prompt), addresses C0:54:45:00:00:01...
    static func configuration(devices count: Int, seed: UInt64 = 7) -> SimulatorConfiguration {
        var configuration = SimulatorConfiguration.generated(count: count, seed: seed)
        for index in configuration.devices.indices { configuration.devices[index].pairing = .justWorks }
        return configuration
    }

    static func gatewayConfiguration() -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.supervisor.backoffBase = .milliseconds(50)
        configuration.supervisor.backoffCap = .milliseconds(500)
        configuration.supervisor.reconnectBurst = 8
        configuration.supervisor.reconnectInterval = .milliseconds(100)
        configuration.supervisor.slotBudget = 16
        configuration.connectTimeout = .seconds(10)
        configuration.changeInterval = .milliseconds(50)
        return configuration
    }

    static func with(
        simulator: SimulatorConfiguration, gateway configuration: GatewayConfiguration = gatewayConfiguration(),
        limits: StorageLimits = StorageLimits(maximumDatabaseBytes: nil, minimumFreeDiskBytes: nil),
        health: (@Sendable (GatewayStorage) -> any HealthValueSink)? = nil,
        _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        try await SimulatedBlueZ.with(simulator) { simulated in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "tether-gateway-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let harness = try await start(
                simulated: simulated, directory: directory, configuration: configuration, limits: limits, health: health)
            do {
                try await body(harness)
            } catch {
                await harness.stop()
                throw error
            }
            await harness.stop()
        }
    }

    /// A gateway (its own bus connection and database in `directory`) on an already running simulator.
    static func start(
        simulated: SimulatedBlueZ, directory: URL, configuration: GatewayConfiguration,
        limits: StorageLimits = StorageLimits(maximumDatabaseBytes: nil, minimumFreeDiskBytes: nil),
        databaseName: String = "gateway.sqlite", committer: GroupCommitter.Configuration = .init(),
        waitForReady: Bool = true, health: (@Sendable (GatewayStorage) -> any HealthValueSink)? = nil
    ) async throws -> GatewayHarness {
        var databaseConfiguration = GatewayDatabase.Configuration()
        databaseConfiguration.limits = limits
        let database = try GatewayDatabase(
            path: directory.appendingPathComponent(databaseName).path, configuration: databaseConfiguration)
        let storage = GatewayStorage(
            database: database,
            committer: GroupCommitter(service: ConsumptionService(database: database), configuration: committer))
        let trace = TraceRecorder()
        var configuration = configuration
        configuration.trace = { trace.record($0) }
        if let health { configuration.health = health(storage) }
        let connection = try await simulated.connect()
        // As tetherd does: StartNotify streams over a wire-protocol connection.
        let notifications = try await DBusWireConnection.connect(to: .address(simulated.bus.address))
        let gateway = Gateway(
            connection: connection, notifications: notifications, storage: storage, configuration: configuration)
        let running = Task { try await gateway.run() }
        if waitForReady { await gateway.waitUntilReady() }
        return GatewayHarness(
            simulated: simulated, gateway: gateway, storage: storage, directory: directory, trace: trace,
            running: running, connection: connection, notifications: notifications)
    }

    let connection: DBusConnection
    let notifications: DBusWireConnection

    init(
        simulated: SimulatedBlueZ, gateway: Gateway, storage: GatewayStorage, directory: URL, trace: TraceRecorder,
        running: Task<Void, any Error>, connection: DBusConnection, notifications: DBusWireConnection
    ) {
        self.notifications = notifications
        self.simulated = simulated
        self.gateway = gateway
        self.storage = storage
        self.directory = directory
        self.trace = trace
        self.running = running
        self.connection = connection
    }

    /// Cancels `run()` (graceful shutdown) and waits for it to return. Cancelling is how `run()` is meant to end,
    /// and it then returns normally: any error it threw (already running, no BlueZ signals) fails the test.
    func stop() async {
        running.cancel()
        do {
            try await running.value
        } catch {
            Issue.record("Gateway.run() threw: \(error)")
        }
        await connection.close()
        await notifications.close()
    }

    static func address(_ number: Int) -> String {
        String(format: "C0:54:45:00:%02X:%02X", (number >> 8) & 0xFF, number & 0xFF)
    }

    static func serial(_ number: Int) -> String { String(format: "TS%08d", number) }

    /// Pairs devices 1...count through the gateway (just works) and waits until each has a link up.
    func pairAll(_ count: Int) async throws {
        for number in 1...count {
            _ = try await gateway.pair(address: Self.address(number), delegate: RejectingDelegate())
        }
        try await waitUntil("\(count) devices connected") {
            let devices = await gateway.devices()
            return devices.count { $0.state == .connected && $0.serial != nil } == count
        }
    }

    func storedEvents(serial: String) throws -> Int {
        try storage.consumption.eventCount(serial: serial)
    }
}

/// Just-works pairing never asks; anything else is refused.
struct RejectingDelegate: AgentDelegate {
    func requestPasskey(device: DBusObjectPath) async -> UInt32? { nil }
    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool { false }
}

/// Every trace event, in order.
final class TraceRecorder: Sendable {
    private let events = Mutex<[GatewayTrace]>([])

    func record(_ event: GatewayTrace) {
        events.withLock { $0.append(event) }
    }

    var all: [GatewayTrace] { events.withLock { $0 } }
}
