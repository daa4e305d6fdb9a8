import BlueZ
import ConnectionSupervisor
import DBus
import LinkProtocol
import TetherStore
import TetherPrimitives

/// The gateway's BlueZ side as one service: it keeps every adopted device connected (through the connection
/// supervisor's rules), runs a link session per device whose events go to the store with ACK-after-commit, and
/// offers scanning, pairing and forgetting to the control API.
///
/// Run it with `run()` (a long-running service); cancelling the task that runs it shuts down gracefully: the
/// commits in flight finish and their ACKs are written, then every device is disconnected.
///
/// Everything else may be called while `run()` is running; calls before it report `.unavailable`.
public actor Gateway {
    public let configuration: GatewayConfiguration
    public let storage: GatewayStorage
    let session: BlueZSession
    let adapter: Adapter
    let clock: GatewayClock
    let tree: BlueZObjectTree
    let driver: SupervisorDriver
    let notificationSource = NotificationSource()
    let pairingRouter = PairingAgentRouter()

    var running = false
    /// The current bluetoothd's object tree has been read (scanning and discovery need no more than this).
    var bluezSynchronized = false
    var agent: Agent?
    /// The Agent1 registration with the current bluetoothd.
    var agentRegistration = AgentRegistration.pending
    /// A (re)registration is wanted (set at every synchronisation); `agentRegistering` while one runs: they never
    /// overlap, because each exports the agent object at the same path.
    var agentNeedsRegistration = false
    var agentRegistering = false
    var wanted: Set<String> = []
    /// The Tether link session of each device that has one (its counters feed the device snapshot).
    var sessions: [String: DeviceSession] = [:]
    /// The other sessions of each device (Device Information today; health profiles and SMP next), by kind.
    var otherSessions: [String: [PeripheralKind: any PeripheralSession]] = [:]
    /// Devices without a Tether link (health devices) whose current link finished its set-up: their link is up
    /// until the link drops. A Tether device's link is up once its session's handshake is done (its counters).
    var standardLinksUp: Set<String> = []
    /// Devices whose services matched no primary kind, with the verdict naming what they offered. They are let go,
    /// not reconnected.
    var unsupported: [String: String] = [:]
    var sessionTasks: [String: Task<Void, Never>] = [:]
    var linkSetups: [String: Task<Void, Never>] = [:]
    var linkSetupNumbers: [String: UInt64] = [:]
    var nextLinkNumber: UInt64 = 0
    var statuses: [String: DeviceStatus] = [:]
    /// Adopted devices whose bond the supervisor's RemoveDevice deleted: bonded again when their link is back.
    var rebondPending: Set<String> = []
    var lastErrors: [String: String] = [:]
    /// Devices whose bond is gone and could not be made again without a technician: a standing condition, shown
    /// when no newer error is, and kept through healthy links until the device is paired or forgotten.
    var bondsLost: [String: String] = [:]
    var seen: [String: Seen] = [:]
    var serials: [String: String] = [:]
    var scanning = false
    /// Whether this connection holds a discovery session in BlueZ (for a scan, or to find wanted devices).
    var discovering = false
    /// Counts bluetoothd restarts: a discovery call that was in flight across one says nothing of the new daemon.
    var bluezLife: UInt64 = 0
    var shuttingDown = false
    var pairingDiscovery = false
    var scanResultsByAddress: [String: ScanResult] = [:]
    /// Devices lent to an exclusive user (`Gateway+Holds.swift`): no session gets their links meanwhile.
    var holds: [String: DeviceHold] = [:]
    var nextHoldNumber: UInt64 = 0
    var dirty: Set<String> = []
    var published: [String: GatewayDevice] = [:]
    var changeSubscribers: [UInt64: AsyncStream<GatewayDevice>.Continuation] = [:]
    var scanSubscribers: [UInt64: AsyncStream<ScanResult>.Continuation] = [:]
    var nextSubscriber: UInt64 = 0
    var readyWaiters: [CheckedContinuation<Void, Never>] = []

    enum AgentRegistration: Equatable {
        case pending
        case registered
        /// BlueZ refused it (the reason is `GatewayStatus.agentError`); the next bluetoothd start tries again.
        case failed(String)
    }

    /// What status snapshots report and `pair` checks: BlueZ's objects are read *and* the agent question is
    /// settled. Without the second half a Pair right after start (or after a bluetoothd restart) would find no
    /// agent to answer BlueZ's questions.
    var bluezAvailable: Bool {
        bluezSynchronized && agentRegistration != .pending
    }

    struct Seen {
        var name: String?
        var rssi: Int16?
        var lastSeenAt: Timestamp?
    }

    /// `notifications`: a wire-protocol connection to the same bus for StartNotify streams (see
    /// `DBusWireConnection`); without one, StartNotify values come through `connection` (libdbus), at several
    /// times the CPU per notification.
    public init(
        connection: DBusConnection, notifications: DBusWireConnection? = nil, storage: GatewayStorage,
        configuration: GatewayConfiguration = GatewayConfiguration(), clock: GatewayClock = .system
    ) {
        self.configuration = configuration
        self.storage = storage
        self.clock = clock
        session = BlueZSession(connection: connection, notifications: notifications)
        adapter = Adapter(session: session, path: configuration.adapter)
        tree = BlueZObjectTree(session: session)
        driver = SupervisorDriver(
            session: session, adapter: adapter, configuration: configuration.supervisor, clock: clock,
            connectTimeout: configuration.connectTimeout)
    }

    // MARK: - Running

    /// Runs until the task is cancelled, then shuts down gracefully. Throws only if the bus connection fails at
    /// start; a BlueZ that is absent or restarts is waited for and resynchronised.
    public func run() async throws {
        guard !running else { throw GatewayError.notPermitted("The gateway is already running") }
        running = true
        let driverTreeEvents = await tree.events()
        let ownTreeEvents = await tree.events()
        let disconnections: AsyncStream<DBusSignal>
        do {
            disconnections = try await session.connection.signals(
                matching: DBusMatchRule(
                    sender: BlueZSession.serviceName, interface: BlueZInterfaceName.device, member: "Disconnected"))
        } catch {
            throw GatewayError.unavailable("cannot subscribe to org.bluez signals: \(error)")
        }
        loadAdoptedDevices()
        let tree = tree
        let driver = driver
        // Unstructured on purpose: cancelling `run()` must not cancel these, because the graceful shutdown still
        // needs the mirror (to see Connected=false), the driver and the commit completions.
        let workers = [
            Task {
                // A failed synchronisation (BlueZ gone mid-call) is retried; the mirror must not stay stale.
                while !Task.isCancelled {
                    do { try await tree.run() } catch {}
                    try? await Task.sleep(for: .milliseconds(200))
                }
            },
            Task { await driver.run(treeEvents: driverTreeEvents, disconnections: disconnections) },
            Task { for await event in driver.eventStream { await self.driverEvent(event) } },
            Task { for await event in ownTreeEvents { await self.treeEvent(event) } },
            Task { await self.publishChanges() },
        ]
        // Until cancelled: an AsyncStream that never yields ends its iteration on cancellation.
        let (never, keep) = AsyncStream.makeStream(of: Void.self)
        for await _ in never {}
        keep.finish()
        // Graceful shutdown runs outside the cancelled task so its D-Bus calls and waits are not cut short.
        await Task { await self.shutDownGracefully() }.value
        for worker in workers { worker.cancel() }
        for worker in workers { await worker.value }
        running = false
    }

    /// Returns once BlueZ's object tree has been read and the agent registered or refused (`status().agentError`),
    /// at once if that happened.
    public func waitUntilReady() async {
        if bluezAvailable { return }
        await withCheckedContinuation { readyWaiters.append($0) }
    }

    func loadAdoptedDevices() {
        let devices = (try? storage.registry.devices()) ?? []
        for record in devices {
            guard let address = record.address else { continue }
            serials[address] = record.serial
            if record.pairingState == .paired { adopt(address) }
        }
        // An adopted peripheral without a Tether device record: a device paired and killed before it named itself
        // (DEVICE_INFO), or a standard device (health) that never will. A Tether device's record decides for it,
        // since the backend may have unpaired it since.
        let recorded = Set(devices.compactMap(\.address))
        for address in (try? storage.peripherals.adoptedAddresses()) ?? [] where !recorded.contains(address) {
            adopt(address)
        }
    }

    func adopt(_ address: String) {
        guard wanted.insert(address).inserted else { return }
        markDirty(address)
        Task { await driver.want(address) }
    }

    /// Graceful shutdown: (1) every session stops taking notifications and finishes its commits in flight, writing
    /// their ACKs; (2) the supervisor disconnects every device; (3) the sessions end; (4) the agent goes.
    func shutDownGracefully() async {
        let timeout = configuration.shutdownTimeout
        let draining: [any PeripheralSession] = Array(sessions.values) + otherSessions.values.flatMap(\.values)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskGroup(of: Void.self) { drains in
                    for session in draining { drains.addTask { await session.drain() } }
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        for task in linkSetups.values { task.cancel() }
        await driver.shutdown(timeout: timeout)
        for session in draining {
            session.linkDown()
            session.finish()
        }
        for task in sessionTasks.values { await task.value }
        sessions.removeAll()
        otherSessions.removeAll()
        standardLinksUp.removeAll()
        sessionTasks.removeAll()
        linkSetups.removeAll()
        shuttingDown = true
        scanning = false
        try? await updateDiscovery()
        try? await agent?.unregister()
        agent = nil
        for address in knownAddresses() { markDirty(address) }
        flushChanges()
        for subscriber in changeSubscribers.values { subscriber.finish() }
        for subscriber in scanSubscribers.values { subscriber.finish() }
        changeSubscribers.removeAll()
        scanSubscribers.removeAll()
    }


    // MARK: - Diagnostics (tests, the soak)

    /// Tasks the gateway still holds: sessions, link set-ups, and BlueZ calls of the driver. Zero after `run()`.
    public func outstandingWork() async -> (sessions: Int, linkSetups: Int, bluezCalls: Int) {
        return (sessions.count, linkSetups.count, await driver.pendingOperationCount)
    }
}
