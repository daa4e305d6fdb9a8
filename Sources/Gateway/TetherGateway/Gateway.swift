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
    private let notificationSource = NotificationSource()
    private let pairingRouter = PairingAgentRouter()

    private var running = false
    /// The current bluetoothd's object tree has been read (scanning and discovery need no more than this).
    private var bluezSynchronized = false
    private var agent: Agent?
    /// The Agent1 registration with the current bluetoothd.
    private var agentRegistration = AgentRegistration.pending
    /// A (re)registration is wanted (set at every synchronisation); `agentRegistering` while one runs: they never
    /// overlap, because each exports the agent object at the same path.
    private var agentNeedsRegistration = false
    private var agentRegistering = false
    private var wanted: Set<String> = []
    /// The Tether link session of each device that has one (its counters feed the device snapshot).
    private var sessions: [String: DeviceSession] = [:]
    /// The other sessions of each device (Device Information today; health profiles and SMP next), by kind.
    private var otherSessions: [String: [PeripheralKind: any PeripheralSession]] = [:]
    /// Devices whose services matched no primary kind, with the verdict naming what they offered. They are let go,
    /// not reconnected.
    private var unsupported: [String: String] = [:]
    private var sessionTasks: [String: Task<Void, Never>] = [:]
    private var linkSetups: [String: Task<Void, Never>] = [:]
    private var linkSetupNumbers: [String: UInt64] = [:]
    private var nextLinkNumber: UInt64 = 0
    private var statuses: [String: DeviceStatus] = [:]
    /// Adopted devices whose bond the supervisor's RemoveDevice deleted: bonded again when their link is back.
    private var rebondPending: Set<String> = []
    private var lastErrors: [String: String] = [:]
    /// Devices whose bond is gone and could not be made again without a technician: a standing condition, shown
    /// when no newer error is, and kept through healthy links until the device is paired or forgotten.
    private var bondsLost: [String: String] = [:]
    private var seen: [String: Seen] = [:]
    private var serials: [String: String] = [:]
    private var scanning = false
    /// Whether this connection holds a discovery session in BlueZ (for a scan, or to find wanted devices).
    private var discovering = false
    private var shuttingDown = false
    private var pairingDiscovery = false
    private var scanResultsByAddress: [String: ScanResult] = [:]
    private var dirty: Set<String> = []
    private var published: [String: GatewayDevice] = [:]
    private var changeSubscribers: [UInt64: AsyncStream<GatewayDevice>.Continuation] = [:]
    private var scanSubscribers: [UInt64: AsyncStream<ScanResult>.Continuation] = [:]
    private var nextSubscriber: UInt64 = 0
    private var readyWaiters: [CheckedContinuation<Void, Never>] = []

    private enum AgentRegistration: Equatable {
        case pending
        case registered
        /// BlueZ refused it (the reason is `GatewayStatus.agentError`); the next bluetoothd start tries again.
        case failed(String)
    }

    /// What status snapshots report and `pair` checks: BlueZ's objects are read *and* the agent question is
    /// settled. Without the second half a Pair right after start (or after a bluetoothd restart) would find no
    /// agent to answer BlueZ's questions.
    private var bluezAvailable: Bool {
        bluezSynchronized && agentRegistration != .pending
    }

    private struct Seen {
        var name: String?
        var rssi: Int16?
        var lastSeenAt: LinkInstant?
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

    private func loadAdoptedDevices() {
        for record in (try? storage.registry.devices()) ?? [] {
            guard let address = record.address else { continue }
            serials[address] = record.serial
            if record.pairingState == .paired { adopt(address) }
        }
    }

    private func adopt(_ address: String) {
        guard wanted.insert(address).inserted else { return }
        markDirty(address)
        Task { await driver.want(address) }
    }

    /// Graceful shutdown: (1) every session stops taking notifications and finishes its commits in flight, writing
    /// their ACKs; (2) the supervisor disconnects every device; (3) the sessions end; (4) the agent goes.
    private func shutDownGracefully() async {
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

    // MARK: - Observation

    /// Every device the gateway knows of: adopted, connected or being supervised.
    public func devices() -> [GatewayDevice] {
        knownAddresses().sorted().map(snapshot)
    }

    /// The device with this serial or address, if known.
    public func device(_ serialOrAddress: String) -> GatewayDevice? {
        guard let address = resolve(serialOrAddress) else { return nil }
        return snapshot(address)
    }

    /// Device snapshots whenever one changes (state, counters, last error), at most one per device per
    /// `changeInterval`. Finishes when the gateway stops.
    public func changes() -> AsyncStream<GatewayDevice> {
        let (stream, continuation) = AsyncStream.makeStream(of: GatewayDevice.self)
        let id = nextSubscriber
        nextSubscriber += 1
        changeSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    public func status() -> GatewayStatus {
        let addresses = knownAddresses()
        return GatewayStatus(
            bluezAvailable: bluezAvailable, agentError: agentError, adapter: adapter.path.rawValue, scanning: scanning,
            devicesKnown: addresses.count,
            // The same state `devices()` shows: one definition of "connected" (GatewayDevice.State).
            devicesConnected: addresses.count { snapshot($0).state == .connected },
            eventsStoredSinceStart: sessions.values.reduce(0) { $0 + $1.counters.withLock { $0.eventsStoredSinceStart } })
    }

    private var agentError: String? {
        guard case .failed(let reason) = agentRegistration else { return nil }
        return reason
    }

    private func unsubscribe(_ id: UInt64) {
        changeSubscribers[id] = nil
        scanSubscribers[id] = nil
    }

    private func knownAddresses() -> Set<String> {
        wanted.union(statuses.keys).union(sessions.keys).union(unsupported.keys)
    }

    private func resolve(_ serialOrAddress: String) -> String? {
        let upper = serialOrAddress.uppercased()
        if knownAddresses().contains(upper) { return upper }
        if let (address, _) = serials.first(where: { $0.value == serialOrAddress }) { return address }
        for (address, session) in sessions where session.counters.withLock({ $0.serial }) == serialOrAddress {
            return address
        }
        if let record = try? storage.registry.device(serial: serialOrAddress), let address = record.address {
            return address
        }
        return nil
    }

    func snapshot(_ address: String) -> GatewayDevice {
        var device = GatewayDevice(address: address)
        device.paired = wanted.contains(address)
        device.serial = serials[address]
        let linkIsUp = sessions[address]?.counters.withLock { $0.linkIsUp } ?? false
        device.state = GatewayDevice.State(statuses[address]?.phase, linkIsUp: linkIsUp)
        if let status = statuses[address] { device.attempts = status.attempts }
        device.lastError = unsupported[address] ?? lastErrors[address] ?? bondsLost[address]
        if let seen = seen[address] {
            device.name = seen.name
            device.rssi = seen.rssi
            device.lastSeenAt = seen.lastSeenAt
        }
        if let counters = sessions[address]?.counters.withLock({ $0 }) {
            device.serial = counters.serial ?? device.serial
            device.firmware = counters.firmware
            device.batteryPercent = counters.batteryPercent
            device.eventsStored = counters.eventsStored
            device.framesReceived = counters.framesReceived
            device.framesSent = counters.framesSent
            device.notifyMethod = counters.notifyMethod
            device.mtu = counters.mtu
            device.linksEstablished = counters.linksEstablished
            if let last = counters.lastSeenAt, last > (device.lastSeenAt ?? last) || device.lastSeenAt == nil {
                device.lastSeenAt = last
            }
            if let storageError = counters.lastStorageError { device.lastError = "storage: \(storageError)" }
        }
        return device
    }

    private func markDirty(_ address: String) {
        dirty.insert(address)
    }

    /// Publishes dirty devices every `changeInterval` (the control API's "at most 4 per second per device").
    private func publishChanges() async {
        while !Task.isCancelled {
            do { try await clock.sleep(configuration.changeInterval) } catch { return }
            flushChanges()
            try? await updateDiscovery()
        }
    }

    private func flushChanges() {
        guard !dirty.isEmpty else { return }
        let addresses = dirty
        dirty.removeAll()
        for address in addresses.sorted() {
            let device = snapshot(address)
            guard published[address] != device else { continue }
            published[address] = device
            for subscriber in changeSubscribers.values { subscriber.yield(device) }
        }
    }

    // MARK: - Events

    private func driverEvent(_ event: SupervisorDriver.Event) async {
        switch event {
        case .linkUp(let address):
            if rebondPending.contains(address) {
                rebond(address)
            } else {
                startLink(address)
            }
        case .bondRemoved(let address):
            if wanted.contains(address) { rebondPending.insert(address) }
        case .failed(let address, let reason):
            lastErrors[address] = reason
            markDirty(address)
        case .linkDown(let address, let reason):
            linkSetups.removeValue(forKey: address)?.cancel()
            sessions[address]?.linkDown()
            for session in otherSessions[address, default: [:]].values { session.linkDown() }
            if let reason { lastErrors[address] = "disconnected: \(reason)" }
            markDirty(address)
        case .statusChanged:
            let current = await driver.statuses
            var updated: [String: DeviceStatus] = [:]
            for (address, status) in current { updated[address.rawValue] = status }
            for address in Set(updated.keys).union(statuses.keys) where updated[address] != statuses[address] {
                markDirty(address)
                if let error = await driver.lastError(of: address) { lastErrors[address] = error }
            }
            statuses = updated
        }
    }

    private func sessionFor(_ address: String) -> DeviceSession {
        if let session = sessions[address] { return session }
        let driver = driver
        let session = DeviceSession(
            address: address, storage: storage, configuration: configuration, clock: clock,
            abandon: { reason in await driver.abandonLink(address, reason: reason) },
            healthy: { [weak self] in await self?.linkHealthy(address) },
            named: { [weak self] serial in await self?.deviceNamed(address, serial: serial) },
            changed: { [weak self] in Task { await self?.markDirty(address) } })
        sessions[address] = session
        sessionTasks[address] = Task { await session.run() }
        return session
    }

    /// The device's session completed its handshake on this link: the link is healthy, so the device's last error
    /// goes and the supervisor forgives its failed attempts.
    private func linkHealthy(_ address: String) async {
        lastErrors[address] = nil
        markDirty(address)
        await driver.linkHealthy(address)
    }

    /// The device's DEVICE_INFO is durably stored: the registry links the address to the serial and records the
    /// pairing (the backend hears of it through the outbox) — unless it was forgotten meanwhile.
    private func deviceNamed(_ address: String, serial: String) {
        serials[address] = serial
        guard wanted.contains(address) else { return }
        var random = SystemRandomNumberGenerator()
        let now = clock.linkNow()
        try? storage.registry.recordAddress(address, serial: serial, at: now, using: &random)
        try? storage.registry.setPairingState(.paired, serial: serial, at: now, using: &random)
    }

    /// After Connect: resolve the device's services (bounded), decide its kinds (`PeripheralClassifier`) and hand the
    /// connection to one session per kind. A session that cannot set its kind up abandons the link: disconnect, and
    /// the supervisor retries under its rules. A device with no primary kind is unsupported and let go.
    private func startLink(_ address: String) {
        nextLinkNumber += 1
        let number = nextLinkNumber
        let device = adapter.device(address: address)
        let (bluez, tree, source, driver) = (self.session, self.tree, notificationSource, self.driver)
        let preference = configuration.notifyPreference
        let timeout = configuration.linkSetupTimeout
        linkSetups[address]?.cancel()
        linkSetups[address] = Task {
            do {
                let services = try await PeripheralLink.resolvedServices(of: device, in: tree, timeout: timeout)
                let classification = PeripheralClassifier.classify(services)
                let sessions = await self.classified(address, classification)
                let link = PeripheralLink(
                    number: number, device: device, session: bluez, tree: tree, notificationSource: source,
                    services: services, notifyPreference: preference, timeout: timeout)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for session in sessions { group.addTask { try await session.linkUp(link) } }
                    try await group.waitForAll()
                }
                // Identified (its Device Information read, when it has one), and let go.
                if !classification.isSupported { await self.letGo(address) }
            } catch is CancellationError {
            } catch {
                await driver.abandonLink(address, reason: "link set-up failed: \(error)")
            }
            await self.linkSetupFinished(address, number: number)
        }
        linkSetupNumbers[address] = number
    }

    /// Records what the device is (peripheral registry) and returns the sessions to hand its connection to, primary
    /// kinds first. An unsupported device keeps its verdict, with the services it offered, in its snapshot.
    private func classified(_ address: String, _ classification: PeripheralClassifier.Classification) async
        -> [any PeripheralSession]
    {
        var random = SystemRandomNumberGenerator()
        try? storage.peripherals.recordClassification(
            kinds: classification.kinds, services: classification.offeredServices, identityAddress: address,
            at: clock.linkNow(), using: &random)
        unsupported[address] = classification.isSupported
            ? nil
            : "unsupported device: it offers none of the services the gateway serves (offers "
                + classification.offeredServices.joined(separator: ", ") + ")"
        markDirty(address)
        return classification.kinds.map { session(for: $0, address) }
    }

    /// An unsupported device is not reconnected forever: the supervisor stops wanting it (and disconnects it).
    private func letGo(_ address: String) async {
        wanted.remove(address)
        rebondPending.remove(address)
        await driver.unwant(address)
        markDirty(address)
    }

    private func session(for kind: PeripheralKind, _ address: String) -> any PeripheralSession {
        switch kind {
        case .tetherLink:
            return sessionFor(address)
        case .deviceInformation:
            if let session = otherSessions[address]?[kind] { return session }
            let session = DeviceInformationSession(
                address: address, storage: storage, clock: clock,
                failed: { [weak self] reason in await self?.sessionFailed(address, reason) })
            otherSessions[address, default: [:]][kind] = session
            return session
        }
    }

    private func sessionFailed(_ address: String, _ reason: String) {
        lastErrors[address] = reason
        markDirty(address)
    }

    /// Bonds a device again after the supervisor's RemoveDevice deleted its bond, then sets the link up. There is no
    /// technician to ask: the agent rejects every question, so a just-works device bonds again and a device that
    /// needs a passkey or a confirmation does not — its `lastError` says to pair it again. A technician's pairing in
    /// progress holds the agent: then the re-bond waits for the next link (never a prompt for the wrong device).
    private func rebond(_ address: String) {
        let device = adapter.device(address: address)
        let timeout = configuration.pairingTimeout
        guard pairingRouter.begin(NoTechnicianDelegate()) else {
            startLink(address)
            return
        }
        rebondPending.remove(address)
        Task {
            let failure: String?
            do {
                try await device.pair(timeout: timeout)
                try? await device.setTrusted(true)
                failure = nil
            } catch BlueZError.alreadyExists {
                failure = nil
            } catch {
                failure = "bond lost when BlueZ's stale connection attempt was cleared (RemoveDevice), and bonding "
                    + "again without a technician failed: \(error); pair the device again"
            }
            await self.rebondFinished(address, failure: failure)
        }
    }

    private func rebondFinished(_ address: String, failure: String?) async {
        pairingRouter.end()
        bondsLost[address] = failure
        markDirty(address)
        // The link may have dropped meanwhile: the next linkUp sets it up.
        guard await driver.connectedAddresses.contains(address), wanted.contains(address) else { return }
        startLink(address)
    }

    private func linkSetupFinished(_ address: String, number: UInt64) {
        guard linkSetupNumbers[address] == number else { return }
        linkSetups[address] = nil
        linkSetupNumbers[address] = nil
    }

    private func treeEvent(_ event: BlueZObjectTree.Event) async {
        switch event {
        case .synchronized:
            bluezSynchronized = true
            // BlueZ forgets agents when it restarts: register (again) after every synchronisation. Availability
            // waits for its outcome.
            agentNeedsRegistration = true
            await registerAgent()
        case .bluezRestarted:
            // Unavailable until the new bluetoothd's objects are read and the agent is registered with it. `agent`
            // stays: the next registration unregisters it, which also unexports its object.
            bluezSynchronized = false
            agentRegistration = .pending
            // The old bluetoothd's discovery session died with it.
            scanning = false
            discovering = false
        case .deviceAdded(let path, let properties):
            noteSeen(path, properties, adding: true)
        case .deviceChanged(let path, let changed, _):
            noteSeen(path, changed, adding: false)
        case .deviceRemoved, .propertiesChanged, .interfacesAdded, .interfacesRemoved:
            return
        }
    }

    /// Registers the agent while a registration is wanted; a synchronisation during one (bluetoothd restarted
    /// meanwhile) makes the running loop register again, so only the current bluetoothd's outcome counts.
    private func registerAgent() async {
        guard !agentRegistering else { return }
        agentRegistering = true
        while agentNeedsRegistration {
            agentNeedsRegistration = false
            agentRegistration = .pending
            if let agent {
                self.agent = nil
                try? await agent.unregister()
            }
            let outcome: AgentRegistration
            do {
                agent = try await Agent.register(
                    session: session, path: configuration.agentPath, capability: .keyboardDisplay,
                    delegate: pairingRouter)
                outcome = .registered
            } catch {
                outcome = .failed("the pairing agent could not be registered with BlueZ: \(error)")
            }
            if !agentNeedsRegistration { agentRegistration = outcome }
        }
        agentRegistering = false
        if bluezAvailable {
            for waiter in readyWaiters { waiter.resume() }
            readyWaiters.removeAll()
        }
    }

    /// The RSSI value HCI uses for "not available".
    static let rssiNotAvailable: Int16 = 127

    private func noteSeen(_ path: DBusObjectPath, _ properties: [String: DBusValue], adding: Bool) {
        guard let address = Device(session: session, path: path).address else { return }
        var entry = seen[address] ?? Seen()
        if let name = properties["Name"]?.stringValue ?? properties["Alias"]?.stringValue { entry.name = name }
        // An RSSI update means an advertising report arrived. 127 is HCI's "RSSI is not available" (Core 5.3
        // Vol 4 Part E 7.7.65.2); the kernel and bluetoothd pass it through as RSSI = 127 (seen with btvirt's
        // controllers), so it marks the device as seen without a signal strength.
        let reported = properties["RSSI"]?.int16Value
        if let reported {
            entry.rssi = reported == Self.rssiNotAvailable ? nil : reported
            entry.lastSeenAt = clock.linkNow()
        }
        seen[address] = entry
        if knownAddresses().contains(address) { markDirty(address) }
        guard scanning, adding || reported != nil else { return }
        let result = ScanResult(
            address: address, name: entry.name, rssi: entry.rssi,
            known: serials[address] != nil || wanted.contains(address), paired: wanted.contains(address),
            lastSeenAt: clock.linkNow())
        scanResultsByAddress[address] = result
        for subscriber in scanSubscribers.values { subscriber.yield(result) }
    }

    // MARK: - Scanning

    /// Starts LE discovery on the adapter. Results accumulate in `scanResults()` and stream from `scanEvents()`.
    public func startScan() async throws(GatewayError) {
        guard bluezSynchronized else { throw .unavailable("org.bluez is not on the bus") }
        guard !scanning else { return }
        scanResultsByAddress.removeAll()
        scanning = true
        do {
            try await updateDiscovery()
        } catch {
            scanning = false
            throw error
        }
    }

    public func stopScan() async throws(GatewayError) {
        guard scanning else { return }
        scanning = false
        try await updateDiscovery()
    }

    /// Holds a discovery session while someone scans, or while an adopted device is missing from BlueZ (removed
    /// after InProgress, or not bonded and so not reloaded after a bluetoothd restart): BlueZ only exports it
    /// again, and so only connects it, once it has been seen advertising.
    private func updateDiscovery() async throws(GatewayError) {
        guard bluezSynchronized else { return }
        var needed = scanning || pairingDiscovery
        if !needed && !shuttingDown && !wanted.isEmpty {
            let exported = await tree.devices
            needed = wanted.contains { exported[adapter.devicePath(address: $0)] == nil }
        }
        guard needed != discovering else { return }
        do {
            if needed {
                try await adapter.setDiscoveryFilter(DiscoveryFilter(transport: .le))
                try await adapter.startDiscovery()
            } else {
                try await adapter.stopDiscovery()
            }
            discovering = needed
        } catch BlueZError.inProgress where needed {
            discovering = true
        } catch BlueZError.failed where !needed {
            discovering = false  // "No discovery started": already stopped
        } catch {
            throw .unavailable("\(needed ? "StartDiscovery" : "StopDiscovery") failed: \(error)")
        }
    }

    public var isScanning: Bool { scanning }

    /// Devices seen since the scan started, strongest signal first.
    public func scanResults() -> [ScanResult] {
        scanResultsByAddress.values.sorted { ($0.rssi ?? .min, $1.address) > ($1.rssi ?? .min, $0.address) }
    }

    /// Scan results as they come (a device seen, or its RSSI changed). Finishes when the gateway stops.
    public func scanEvents() -> AsyncStream<ScanResult> {
        let (stream, continuation) = AsyncStream.makeStream(of: ScanResult.self)
        let id = nextSubscriber
        nextSubscriber += 1
        scanSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    // MARK: - Pairing and forgetting

    /// Pairs with the device at `address` through the gateway's Agent1; BlueZ's questions go to `delegate`
    /// (the daemon forwards them to the CLI). Discovers the device first if BlueZ does not know it yet. Then the
    /// device is adopted: trusted, connected and kept connected; the registry records it once it names itself.
    public func pair(address: String, delegate: any AgentDelegate) async throws(GatewayError) -> GatewayDevice {
        let address = address.uppercased()
        guard Self.isAddress(address) else { throw .invalidArgument("'\(address)' is not a Bluetooth address") }
        guard bluezSynchronized else { throw .unavailable("org.bluez is not on the bus") }
        switch agentRegistration {
        case .registered: break
        case .pending: throw .unavailable("the pairing agent is not registered with BlueZ yet")
        case .failed(let reason): throw .unavailable(reason)
        }
        guard pairingRouter.begin(delegate) else { throw .busy("Another pairing is in progress") }
        defer { pairingRouter.end() }
        let device = adapter.device(address: address)
        try await discoverIfNeeded(device)
        do {
            try await device.pair(timeout: configuration.pairingTimeout)
        } catch BlueZError.alreadyExists {
            // Already bonded in BlueZ: adopting it is all that is left.
        } catch BlueZError.authenticationCanceled, BlueZError.canceled, BlueZError.authenticationTimeout {
            throw .promptCanceled
        } catch {
            throw .pairingFailed("\(error)")
        }
        try? await device.setTrusted(true)
        bondsLost[address] = nil
        adopt(address)
        return snapshot(address)
    }

    /// Adopts a device that is already bonded in BlueZ (paired outside the gateway), without pairing again.
    public func adopt(address: String) throws(GatewayError) {
        let address = address.uppercased()
        guard Self.isAddress(address) else { throw .invalidArgument("'\(address)' is not a Bluetooth address") }
        adopt(address)
    }

    /// Forgets a device: disconnects it, removes it from BlueZ (bond and cached GATT) and marks it unpaired in the
    /// registry. Its stored data stays until synced and pruned.
    public func forget(_ serialOrAddress: String) async throws(GatewayError) {
        guard let address = resolve(serialOrAddress) else { throw .unknownDevice(serialOrAddress) }
        wanted.remove(address)
        rebondPending.remove(address)
        bondsLost[address] = nil
        await driver.unwant(address)
        await notificationSource.forget(adapter.devicePath(address: address))
        do {
            try await adapter.removeDevice(adapter.devicePath(address: address))
        } catch BlueZError.doesNotExist {
        } catch BlueZError.dbus(let error) where error.code == .unknownObject {
        } catch {
            throw .unavailable("RemoveDevice failed: \(error)")
        }
        let serial = serials[address] ?? sessions[address]?.counters.withLock { $0.serial }
        if let serial {
            var random = SystemRandomNumberGenerator()
            do {
                try storage.registry.setPairingState(.unpaired, serial: serial, at: clock.linkNow(), using: &random)
            } catch {
                throw .storageFailed("\(error)")
            }
        }
        markDirty(address)
    }

    /// The desired settings of `serial` changed (SetSettings, a sync pull): send them if the device is connected.
    public func desiredSettingsChanged(serial: String) throws(GatewayError) {
        guard let address = resolve(serial) else { throw .unknownDevice(serial) }
        let config: DeviceConfig?
        do {
            config = try storage.settings.configToApply(serial: serial)
        } catch {
            throw .storageFailed("\(error)")
        }
        if let config { sessions[address]?.send(.desiredConfig(config)) }
    }

    /// Makes sure BlueZ knows the device before `Pair`: discovery until it is exported, at most 10 s.
    private func discoverIfNeeded(_ device: Device) async throws(GatewayError) {
        if await tree.devices[device.path] != nil { return }
        let events = await tree.events()
        pairingDiscovery = true
        defer { pairingDiscovery = false }
        try await updateDiscovery()
        let path = device.path
        let found: Bool
        if await tree.devices[path] != nil {
            found = true
        } else {
            found =
                (try? await withThrowingTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        for await event in events {
                            if case .deviceAdded(path, _) = event { return true }
                        }
                        return false
                    }
                    group.addTask {
                        try await Task.sleep(for: .seconds(10))
                        return false
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? false
                }) ?? false
        }
        guard found else { throw .unknownDevice("\(device.address ?? path.rawValue) (not seen within 10 s)") }
    }

    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }

    // MARK: - Diagnostics (tests, the soak)

    /// Tasks the gateway still holds: sessions, link set-ups, and BlueZ calls of the driver. Zero after `run()`.
    public func outstandingWork() async -> (sessions: Int, linkSetups: Int, bluezCalls: Int) {
        return (sessions.count, linkSetups.count, await driver.pendingOperationCount)
    }
}

