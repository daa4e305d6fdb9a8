import DBus
import Foundation
import SMPDeviceModel

/// The simulated bluetoothd: owns `org.bluez` on a bus, exports BlueZ's object tree with an ObjectManager at `/`,
/// and the control object `io.tether.Simulator1` at `/io/tether/simulator` on the same connection.
///
/// Objects are exported before the name is taken, so a client that sees `org.bluez` appear finds the adapter in
/// `GetManagedObjects`.
public actor BlueZSimulator {
    public static let busName = "org.bluez"
    public nonisolated let connection: DBusConnection
    public nonisolated let adapter: SimulatedAdapter
    public nonisolated let agents: SimulatedAgentManager
    public nonisolated let devices: [SimulatedDevice]
    public nonisolated let configuration: SimulatorConfiguration
    private var restarting = false

    private init(
        connection: DBusConnection, configuration: SimulatorConfiguration, releasedLog: ReleasedEventLog?,
        smpServers: [SMPBluetoothServer?]
    ) {
        self.connection = connection
        self.configuration = configuration
        let adapter = SimulatedAdapter(
            address: configuration.adapterAddress, name: configuration.adapterName, connection: connection)
        let agents = SimulatedAgentManager()
        self.adapter = adapter
        self.agents = agents
        devices = configuration.devices.enumerated().map { index, device in
            SimulatedDevice(
                configuration: device, adapterPath: "/org/bluez/hci0", connection: connection, adapter: adapter,
                agents: agents, link: configuration.link, seed: configuration.seed &+ UInt64(index) &* 7919,
                releasedLog: releasedLog, smp: smpServers[index])
        }
    }

    /// Connects to `bus`, exports everything and takes `org.bluez`.
    public static func start(configuration: SimulatorConfiguration, bus: DBusBusAddress) async throws
        -> BlueZSimulator
    {
        let releasedLog = try configuration.releasedLog.map { try ReleasedEventLog(path: $0) }
        // Each SMP device's image is read before anything is exported: a bad path fails the start, with the reason.
        let smpServers = try configuration.devices.map { try $0.smp?.makeServer() }
        let connection = try await DBusConnection.connect(to: bus)
        let simulator = BlueZSimulator(
            connection: connection, configuration: configuration, releasedLog: releasedLog, smpServers: smpServers)
        await simulator.adapter.attach(simulator.devices)
        try connection.objectServer.addObjectManager(at: .root)
        try await connection.objectServer.export([SimulatorControl.interface(simulator)], at: SimulatorControl.path)
        try await simulator.exportBlueZ()
        // Devices bonded before the start (`DeviceConfiguration.bonded`) are loaded from storage, as bluetoothd does.
        for device in simulator.devices { await device.reloadIfBonded() }
        let departures = try await connection.nameOwnerChanges()
        Task { [weak simulator] in
            for await change in departures where change.newOwner == nil && change.name.hasPrefix(":") {
                await simulator?.clientVanished(change.name)
            }
        }
        try await simulator.takeName()
        return simulator
    }

    /// Like bluetoothd, end what a client that left the bus started: notify sessions, discovery, its agents.
    private func clientVanished(_ name: String) async {
        for device in devices { await device.clientVanished(name) }
        await adapter.clientVanished(name)
        await agents.clientVanished(name)
    }

    /// Runs until the bus goes away.
    public func run() async {
        await connection.waitUntilDisconnected()
    }

    public func stop() async {
        await connection.close()
    }

    public func device(at path: DBusObjectPath) -> SimulatedDevice? {
        devices.first { $0.path == path }
    }

    private func exportBlueZ() async throws {
        try await connection.objectServer.export([agents.interface()], at: "/org/bluez")
        try await connection.objectServer.export([adapter.interface()], at: adapter.path)
    }

    private func takeName() async throws {
        let reply = try await connection.requestName(Self.busName, flags: [.doNotQueue])
        guard reply == .primaryOwner || reply == .alreadyOwner else {
            throw DBusError(.failed, "\(Self.busName) is already owned on this bus (\(reply))")
        }
    }

    /// The bluetoothd-restart fault: give up `org.bluez`, drop every BlueZ object silently (a dead daemon sends
    /// nothing), wait `downtime`, then export the adapter and bonded devices again and take the name back.
    /// Clients see NameOwnerChanged twice.
    ///
    /// Calls in flight (Connect, Pair) die with the old bluetoothd: their callers get dbus-daemon's NoReply, at
    /// once, never an answer from the new one. `lateNoReply` holds those answers until that long after the name
    /// is back: the order in which a client's tasks may see them (the restart's signals first, then the error
    /// of a call it made before), which a client must survive.
    func restartBluetoothd(downtime: Duration, lateNoReply: Duration? = nil) async throws {
        guard !restarting else { throw BlueZError.inProgress }
        restarting = true
        defer { restarting = false }
        let (held, release) = AsyncStream<Never>.makeStream()
        let droppedCallsAnswered = lateNoReply.map { _ in Task { for await _ in held {} } }
        defer {
            Task {
                if let lateNoReply { try? await Task.sleep(for: lateNoReply) }
                release.finish()
            }
        }
        _ = try await connection.releaseName(Self.busName)
        await adapter.forgetForRestart(droppedCallsAnswered: droppedCallsAnswered)
        await agents.forgetAll()
        let server = connection.objectServer
        server.removeObjectManager(at: .root)
        for path in server.exportedPaths.reversed() where path.rawValue.hasPrefix("/org/bluez") {
            server.unexport(path)
        }
        try? await Task.sleep(for: downtime)
        try server.addObjectManager(at: .root)
        try await exportBlueZ()
        for device in devices { await device.reloadIfBonded() }
        try await takeName()
    }
}
