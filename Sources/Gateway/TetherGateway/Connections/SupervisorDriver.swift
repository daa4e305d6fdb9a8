import BlueZ
import ConnectionSupervisor
import DBus

/// The I/O edge of `ConnectionSupervisor`: feeds it facts from BlueZ and carries out its orders.
///
/// - Orders: `.connect` runs `Device.connect(timeout:)` (bounded, the 5.66 race handled there) and reports the
///   outcome; `.disconnect` calls `Device1.Disconnect`; `.removeDevice` calls `Adapter1.RemoveDevice`;
///   `.armTimer` (re)arms the single timer with the injected clock.
/// - Facts: `Connected=false` (or the device object vanishing) → `.disconnected`; org.bluez changing owner →
///   `.bluezRestarted`. A Device1 appearing for a wanted device the supervisor dropped → `.deviceWanted` again.
/// - Generations: every bluetoothd restart starts a new generation. An outcome (a Connect reply, a timer) of an
///   earlier generation is stale — that bluetoothd is gone — and is dropped here, before the supervisor sees it.
public actor SupervisorDriver {
    /// What the driver tells its owner (the gateway) after the supervisor acted.
    public enum Event: Hashable, Sendable {
        /// The link to the device is up (Connect succeeded in the current generation): set up the session.
        case linkUp(address: String)
        /// The link is gone (Connected=false, the object vanished, or bluetoothd restarted).
        case linkDown(address: String, reason: String?)
        /// Some device's supervisor status changed (state, attempts, last error).
        case statusChanged
        /// The supervisor's RemoveDevice (rule 4) dropped this device's bond: the next link should bond again.
        case bondRemoved(address: String)
        /// Something went wrong with the device (a failed Connect, an abandoned link). Pushed, not left to be
        /// read: a healthy link clears the driver's own copy, possibly before anyone looked.
        case failed(address: String, reason: String)
    }

    let session: BlueZSession
    let adapter: Adapter
    let clock: GatewayClock
    let connectTimeout: Duration
    private var supervisor: ConnectionSupervisor
    private var generation: UInt64 = 0
    private var timer: Task<Void, Never>?
    private var connected: Set<String> = []
    private var wanted: Set<String> = []
    private var disconnectReasons: [String: String] = [:]
    /// Links the gateway gave up on (`abandonLink`): their reason, not our own Disconnect's, is the last error.
    private var abandoned: Set<String> = []
    private var lastErrors: [String: String] = [:]
    private var pendingOperations: [UInt64: Task<Void, Never>] = [:]
    private var nextOperation: UInt64 = 0
    private let events: AsyncStream<Event>.Continuation
    /// The driver's events, in order; one consumer (the gateway).
    public nonisolated let eventStream: AsyncStream<Event>

    public init(
        session: BlueZSession, adapter: Adapter, configuration: SupervisorConfiguration, clock: GatewayClock,
        connectTimeout: Duration
    ) {
        self.session = session
        self.adapter = adapter
        self.clock = clock
        self.connectTimeout = connectTimeout
        supervisor = ConnectionSupervisor(configuration: configuration)
        (eventStream, events) = AsyncStream.makeStream(of: Event.self)
    }

    // MARK: Observation

    public var statuses: [DeviceAddress: DeviceStatus] { supervisor.devices }
    public func status(of address: String) -> DeviceStatus? { supervisor.status(of: DeviceAddress(address)) }
    /// The last failure or disconnect reason, in words.
    public func lastError(of address: String) -> String? { lastErrors[address] }

    private func recordFailure(_ address: String, _ reason: String) {
        lastErrors[address] = reason
        events.yield(.failed(address: address, reason: reason))
    }
    public var currentGeneration: UInt64 { generation }
    public var isShuttingDown: Bool { supervisor.isShuttingDown }
    /// Devices whose link is up as far as the driver knows.
    public var connectedAddresses: Set<String> { connected }
    /// BlueZ calls still running (for leak checks: zero when idle).
    public var pendingOperationCount: Int { pendingOperations.count }

    // MARK: Facts from the owner

    public func want(_ address: String) {
        wanted.insert(address)
        apply(.deviceWanted(DeviceAddress(address), at: clock.supervisorNow()))
    }

    public func unwant(_ address: String) {
        wanted.remove(address)
        apply(.deviceUnwanted(DeviceAddress(address), at: clock.supervisorNow()))
    }

    /// The session gave up on a link it could not set up or that broke (GATT missing, subscription refused, the
    /// device unresponsive): the supervisor counts it as a failed attempt and orders the Disconnect; it reconnects
    /// after its backoff (rule 3), not at once — a set-up that keeps failing must not cost a Connect a second.
    public func abandonLink(_ address: String, reason: String) {
        recordFailure(address, reason)
        abandoned.insert(address)
        apply(.linkFailed(DeviceAddress(address), at: clock.supervisorNow()))
        let device = adapter.device(address: address)
        spawn {
            // If the link was already down (Connected=false raced the Connect reply) no signal will come: say so.
            if (try? await device.properties().connected) != true { await self.linkGone(address) }
        }
    }

    /// The device's link is set up and its session's handshake completed: its failed attempts and its last error
    /// are forgiven (a device that works shows no stale error).
    public func linkHealthy(_ address: String) {
        lastErrors[address] = nil
        apply(.linkHealthy(DeviceAddress(address), at: clock.supervisorNow()))
    }

    /// Rule 7: disconnect everything and start nothing new. Returns once every link is down or `timeout` passed.
    ///
    /// The bound is wall time (what the daemon owes systemd), not one of the supervisor's decisions: it must hold
    /// even while a test's manual clock stands still, so it does not use the injected clock.
    public func shutdown(timeout: Duration) async {
        apply(.shutdown(at: clock.supervisorNow()))
        let deadline = ContinuousClock.now + timeout
        while !supervisor.devices.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        timer?.cancel()
        timer = nil
        for task in pendingOperations.values { task.cancel() }
        events.finish()
    }

    // MARK: Facts from BlueZ

    /// Applies the object tree's events until the stream ends.
    public func run(treeEvents: AsyncStream<BlueZObjectTree.Event>, disconnections: AsyncStream<DBusSignal>) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in treeEvents { await self.treeEvent(event) }
            }
            group.addTask {
                for await signal in disconnections { await self.disconnectedSignal(signal) }
            }
            await group.waitForAll()
        }
    }

    private func treeEvent(_ event: BlueZObjectTree.Event) {
        switch event {
        case .deviceChanged(let path, let changed, _):
            guard let address = Device(session: session, path: path).address else { return }
            if changed["Connected"] == .bool(false) { linkGone(address) }
        case .deviceRemoved(let path):
            // RemoveDevice (our own clearing, or `forget`), or the restart's removals (already handled).
            guard let address = Device(session: session, path: path).address else { return }
            linkGone(address)
        case .deviceAdded(let path, _):
            guard let address = Device(session: session, path: path).address, wanted.contains(address),
                supervisor.status(of: DeviceAddress(address)) == nil, !supervisor.isShuttingDown
            else { return }
            apply(.deviceWanted(DeviceAddress(address), at: clock.supervisorNow()))
        case .bluezRestarted:
            // Every link and every pending call of the old bluetoothd is gone.
            generation += 1
            for address in connected.sorted() {
                events.yield(.linkDown(address: address, reason: "bluetoothd restarted"))
            }
            connected.removeAll()
            apply(.bluezRestarted(at: clock.supervisorNow()))
        case .propertiesChanged, .interfacesAdded, .interfacesRemoved, .synchronized:
            return
        }
    }

    /// `Device1.Disconnected(reason, message)` (BlueZ ≥ 5.76) comes just before Connected=false: keep the reason.
    private func disconnectedSignal(_ signal: DBusSignal) {
        guard let address = Device(session: session, path: signal.path).address,
            let reason = signal.arguments.first?.stringValue
        else { return }
        disconnectReasons[address] = reason
    }

    private func linkGone(_ address: String) {
        guard connected.contains(address) || supervisor.status(of: DeviceAddress(address)) != nil else { return }
        // Our own Disconnect of an abandoned link says "terminated by local host": keep the reason we gave up.
        let reason = abandoned.remove(address) == nil ? disconnectReasons[address] : nil
        disconnectReasons[address] = nil
        if connected.remove(address) != nil {
            if let reason { lastErrors[address] = "disconnected: \(reason)" }
            events.yield(.linkDown(address: address, reason: reason))
        }
        apply(.disconnected(DeviceAddress(address), at: clock.supervisorNow()))
    }

    // MARK: The supervisor

    private func apply(_ input: SupervisorInput) {
        let orders = supervisor.handle(input)
        for order in orders { execute(order) }
        events.yield(.statusChanged)
    }

    private func execute(_ order: SupervisorOrder) {
        let generation = generation
        switch order {
        case .connect(let address):
            let device = adapter.device(address: address.rawValue)
            let timeout = connectTimeout
            spawn {
                do {
                    try await device.connect(timeout: timeout)
                    await self.connectFinished(address, error: nil, generation: generation)
                } catch {
                    await self.connectFinished(address, error: error, generation: generation)
                }
            }
        case .disconnect(let address):
            let device = adapter.device(address: address.rawValue)
            spawn { try? await device.disconnect() }
        case .removeDevice(let address):
            let adapter = adapter
            let device = adapter.device(address: address.rawValue)
            spawn {
                // RemoveDevice also deletes the bond (and its keys): say so if there was one, so the device is
                // bonded again once it is back, instead of running unbonded until a technician notices.
                let wasBonded = (try? await device.properties().paired) == true
                do {
                    try await adapter.removeDevice(device.path)
                    if wasBonded { await self.bondRemoved(address.rawValue) }
                } catch {}
            }
        case .armTimer(let at):
            _ = generation
            timer?.cancel()
            let delay = at - clock.supervisorNow()
            let sleep = clock.sleep
            timer = Task {
                do {
                    try await sleep(max(delay, .zero))
                } catch {
                    return
                }
                await self.timerFired()
            }
        }
    }

    private func connectFinished(_ address: DeviceAddress, error: (any Error)?, generation: UInt64) {
        // An answer from a bluetoothd that has since restarted says nothing about the current one.
        guard generation == self.generation else { return }
        let now = clock.supervisorNow()
        if let error {
            recordFailure(address.rawValue, "connect failed: \(error)")
            apply(.connectFailed(address, ConnectFailureKind(error), at: now))
            return
        }
        let wasConnecting = supervisor.status(of: address)?.phase == .connecting
        apply(.connectSucceeded(address, at: now))
        if wasConnecting, supervisor.status(of: address)?.phase == .connected {
            // The last error stays until the link proves healthy (`linkHealthy`): the set-up may still fail.
            abandoned.remove(address.rawValue)
            connected.insert(address.rawValue)
            events.yield(.linkUp(address: address.rawValue))
        }
    }

    private func bondRemoved(_ address: String) {
        events.yield(.bondRemoved(address: address))
    }

    /// Timers stay meaningful across a restart (backoffs are the supervisor's own), so no generation check.
    private func timerFired() {
        apply(.timerFired(at: clock.supervisorNow()))
    }

    /// Runs one BlueZ call as a task the driver tracks (cancelled on shutdown, counted for leak checks).
    private func spawn(_ body: @escaping @Sendable () async -> Void) {
        let id = nextOperation
        nextOperation += 1
        pendingOperations[id] = Task {
            await body()
            await self.operationFinished(id)
        }
    }

    private func operationFinished(_ id: UInt64) {
        pendingOperations[id] = nil
    }
}
