import BlueZ
import LinkProtocol
import Synchronization
import TetherStore
import TetherPrimitives

/// One device's link session, across its connections: notifications in, `LinkAction`s out.
///
/// Every input goes through one FIFO stream and one loop, so the `LinkSession` sees facts in the order they
/// happened: a notification, a commit completion (the committer completes in submission order), a timer.
///
/// The ACK discipline (link protocol §8.2) is the session's; this loop keeps its side of it: `.persist` goes to the
/// `GroupCommitter`, and only the commit's completion calls `persisted` (whose actions carry the ACK). A storage
/// condition calls `persistFailed(..., .storageFull)` (§8.10): no ACK, the device keeps its events.
final class DeviceSession: PeripheralSession {
    let kind = PeripheralKind.tetherLink

    enum Input: Sendable {
        case linkUp(DeviceLink)
        /// ATT notifications that arrived together (one read of the socket or the bus), in order.
        case notifications(link: UInt64, [[UInt8]])
        /// The link ended; nil means whichever link is current.
        case linkDown(link: UInt64?)
        case timerFired(LinkTimer, token: UInt64)
        case persisted(PersistBatch, Result<BatchOutcome, StoreError>)
        case desiredConfig(DeviceConfig)
        /// Graceful shutdown, step 1: stop taking notifications, finish the commits in flight and write their ACKs,
        /// then resume the continuation.
        case drain(CheckedContinuation<Void, Never>)
    }

    /// What the session has learnt, for the device snapshot (read from any thread).
    struct Counters: Hashable, Sendable {
        var serial: String?
        var firmware: String?
        var batteryPercent: UInt8?
        var eventsStored: UInt64 = 0
        var eventsStoredSinceStart: UInt64 = 0
        var framesReceived: UInt64 = 0
        var framesSent: UInt64 = 0
        var notifyMethod: GatewayDevice.NotifyMethod?
        var mtu: Int?
        var lastSeenAt: Timestamp?
        var linksEstablished: UInt64 = 0
        var linkIsUp = false
        var batchesInFlight = 0
        var lastStorageError: String?
    }

    let address: String
    let counters = Mutex(Counters())
    private let storage: GatewayStorage
    private let configuration: GatewayConfiguration
    private let clock: GatewayClock
    private let abandon: @Sendable (String) async -> Void
    private let healthy: @Sendable () async -> Void
    private let named: @Sendable (String) async -> Void
    private let changed: @Sendable () -> Void
    private let inputs: AsyncStream<Input>.Continuation
    private let stream: AsyncStream<Input>

    /// - Parameters:
    ///   - abandon: disconnect the device (the session ordered it, or a write failed); the reason in words.
    ///   - healthy: the link's handshake completed (link protocol §11 `established`): the link works.
    ///   - named: the device's DEVICE_INFO is durably stored under this serial (the gateway updates the registry).
    ///   - changed: the counters changed (the gateway republishes the snapshot).
    init(
        address: String, storage: GatewayStorage, configuration: GatewayConfiguration, clock: GatewayClock,
        abandon: @escaping @Sendable (String) async -> Void, healthy: @escaping @Sendable () async -> Void,
        named: @escaping @Sendable (String) async -> Void, changed: @escaping @Sendable () -> Void
    ) {
        self.address = address
        self.storage = storage
        self.configuration = configuration
        self.clock = clock
        self.abandon = abandon
        self.healthy = healthy
        self.named = named
        self.changed = changed
        (stream, inputs) = AsyncStream.makeStream(of: Input.self)
    }

    func send(_ input: Input) {
        inputs.yield(input)
    }

    /// Sets the Tether link up on the connection (subscribed before HELLO, §2.2) and hands it to the loop. A
    /// cancelled set-up (the link dropped meanwhile) releases what it acquired.
    func linkUp(_ link: PeripheralLink) async throws {
        let deviceLink = try await DeviceLink.establish(link)
        guard !Task.isCancelled else {
            deviceLink.writer.close()
            throw CancellationError()
        }
        send(.linkUp(deviceLink))
    }

    func linkDown() {
        send(.linkDown(link: nil))
    }

    /// Ends the loop once the inputs queued so far are handled.
    func finish() {
        inputs.finish()
    }

    /// Waits until every commit in flight has completed and its ACKs are written.
    func drain() async {
        await withCheckedContinuation { continuation in
            if case .terminated = inputs.yield(.drain(continuation)) { continuation.resume() }
        }
    }

    // MARK: - The loop

    private struct Timer {
        let token: UInt64
        let task: Task<Void, Never>
    }

    private struct LoopState {
        var link: LinkSession?
        var current: DeviceLink?
        var forwarder: Task<Void, Never>?
        var timers: [LinkTimer: Timer] = [:]
        var nextToken: UInt64 = 0
        var inFlight: Set<PersistBatch.ID> = []
        var draining = false
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
        var adoptedSerial: String?
    }

    /// Runs until `finish()`; then releases the link and the timers.
    func run() async {
        var state = LoopState()
        for await input in stream {
            await handle(input, &state)
        }
        for timer in state.timers.values { timer.task.cancel() }
        state.forwarder?.cancel()
        state.current?.writer.close()
        for waiter in state.drainWaiters { waiter.resume() }
    }

    private func handle(_ input: Input, _ state: inout LoopState) async {
        let now = clock.linkNow()
        switch input {
        case .linkUp(let link):
            if state.link == nil { state.link = makeSession() }
            if let previous = state.current {
                state.forwarder?.cancel()
                previous.writer.close()
            }
            state.current = link
            let inputs = inputs
            let number = link.number
            state.forwarder = Task {
                for await batch in link.notifications { inputs.yield(.notifications(link: number, batch)) }
                inputs.yield(.linkDown(link: number))
            }
            counters.withLock {
                $0.notifyMethod = link.method
                $0.mtu = link.mtu
                $0.linksEstablished += 1
                $0.linkIsUp = true
            }
            changed()
            // §2.2: subscribed first (DeviceLink.establish), then the session says HELLO.
            await execute(state.link!.connected(mtu: link.mtu, at: now), &state)

        case .notifications(let number, let batch):
            for value in batch {
                // Checked per value: executing one value's actions can end the link or start draining.
                guard number == state.current?.number, !state.draining, state.link != nil else { return }
                counters.withLock {
                    $0.framesReceived += 1
                    $0.lastSeenAt = now
                }
                if configuration.trace != nil { trace(.received(address: address, value)) }
                await execute(state.link!.received(value, at: now), &state)
            }

        case .linkDown(let number):
            guard let current = state.current, number == nil || number == current.number else { return }
            state.forwarder?.cancel()
            state.forwarder = nil
            current.writer.close()
            state.current = nil
            counters.withLock { $0.linkIsUp = false }
            changed()
            if state.link != nil { await execute(state.link!.disconnected(at: now), &state) }

        case .timerFired(let timer, let token):
            guard state.timers[timer]?.token == token else { return }
            state.timers[timer] = nil
            guard !state.draining, state.link != nil else { return }
            await execute(state.link!.timerFired(timer, at: now), &state)

        case .persisted(let batch, let result):
            state.inFlight.remove(batch.id)
            counters.withLock { $0.batchesInFlight = state.inFlight.count }
            guard state.link != nil else { return }
            switch result {
            case .success(let outcome):
                trace(.committed(address: address, batch: batch.id, storedEvents: outcome.storedEvents))
                for case .reportedConfig(_, let config) in batch.items {
                    trace(.settingsStored(address: address, batch: batch.id, config))
                }
                learn(from: batch, outcome: outcome)
                // §8.2: only now may the frames of this batch be acknowledged.
                await execute(state.link!.persisted(batch.id, at: now), &state)
                if let config = outcome.configToApply {
                    await execute(state.link!.desiredConfigChanged(config, at: now), &state)
                }
                if let serial = serial(in: batch), state.adoptedSerial != serial {
                    state.adoptedSerial = serial
                    await named(serial)
                    if let config = try? storage.settings.configToApply(serial: serial) {
                        await execute(state.link!.desiredConfigChanged(config, at: now), &state)
                    }
                }
            case .failure(let error):
                trace(.persistFailed(address: address, batch: batch.id, error))
                counters.withLock { $0.lastStorageError = error.description }
                // §8.10: no ACK; the device keeps the events and offers them again later.
                await execute(state.link!.persistFailed(batch.id, reason: error.storageFailure, at: now), &state)
            }
            changed()
            resumeDrainWaitersIfIdle(&state)

        case .desiredConfig(let config):
            guard state.link != nil, !state.draining else { return }
            await execute(state.link!.desiredConfigChanged(config, at: now), &state)

        case .drain(let continuation):
            state.draining = true
            state.drainWaiters.append(continuation)
            resumeDrainWaitersIfIdle(&state)
        }
    }

    private func resumeDrainWaitersIfIdle(_ state: inout LoopState) {
        guard state.draining, state.inFlight.isEmpty else { return }
        for waiter in state.drainWaiters { waiter.resume() }
        state.drainWaiters.removeAll()
    }

    /// The session starts from what the store knows of the device last seen at this address (its dedup history
    /// and clock anchors), or empty for a new device: its DEVICE_INFO names it.
    private func makeSession() -> LinkSession {
        let seed = try? storage.consumption.sessionSeed(address: address)
        if let seed {
            let serial = seed.history.serial
            let stored = (try? storage.consumption.eventCount(serial: serial)).map { UInt64($0) } ?? 0
            counters.withLock {
                $0.serial = serial
                $0.eventsStored = stored
            }
        }
        return LinkSession(
            configuration: configuration.link, history: seed?.history ?? DeviceHistory(),
            clock: seed?.clock ?? DeviceClock())
    }

    // MARK: - Orders

    private func execute(_ actions: [LinkAction], _ state: inout LoopState) async {
        for action in actions {
            switch action {
            case .write(let bytes):
                guard let link = state.current else { continue }
                do {
                    let values = try await link.writer.write(bytes)
                    counters.withLock { $0.framesSent += UInt64(values) }
                    if configuration.trace != nil { trace(.wrote(address: address, bytes)) }
                } catch {
                    // The link is going or gone; the session hears `disconnected` when it is.
                    await abandon("write to RX failed: \(error)")
                }
            case .persist(let batch):
                state.inFlight.insert(batch.id)
                counters.withLock { $0.batchesInFlight = state.inFlight.count }
                let inputs = inputs
                trace(.submitted(address: address, batch: batch.id))
                storage.committer.submit(batch) { result in inputs.yield(.persisted(batch, result)) }
            case .armTimer(let timer, let at):
                state.timers[timer]?.task.cancel()
                let token = state.nextToken
                state.nextToken += 1
                let delay = clock.linkNow().duration(to: at)
                let sleep = clock.sleep
                let inputs = inputs
                let task = Task {
                    do { try await sleep(max(delay, .zero)) } catch { return }
                    inputs.yield(.timerFired(timer, token: token))
                }
                state.timers[timer] = Timer(token: token, task: task)
            case .cancelTimer(let timer):
                state.timers.removeValue(forKey: timer)?.task.cancel()
            case .disconnect(let reason):
                await abandon("link session: \(reason)")
            case .report(let report):
                note(report)
                if case .negotiated = report { await healthy() }
            }
        }
    }

    private func note(_ report: LinkReport) {
        switch report {
        case .negotiated(_, let info):
            let stored = (try? storage.consumption.eventCount(serial: info.serial)).map { UInt64($0) }
            counters.withLock {
                $0.serial = info.serial
                $0.firmware = "\(info.firmware.major).\(info.firmware.minor).\(info.firmware.patch)"
                if let stored { $0.eventsStored = stored }
            }
            changed()
        case .settings(let traffic):
            trace(.settings(address: address, traffic))
        case .rebootDetected, .identityChanged, .rejected, .nackReceived, .acknowledged, .duplicate, .repeatedFrame,
            .anchorAdded, .timeSyncLost, .storageRefused, .desiredConfigRefused, .bufferOverrun:
            break
        }
    }

    /// Counters from a committed batch: stored events, the battery level.
    private func learn(from batch: PersistBatch, outcome: BatchOutcome) {
        var battery: UInt8?
        for item in batch.items {
            if case .battery(_, let status, _) = item { battery = status.percent }
        }
        counters.withLock {
            $0.eventsStored += UInt64(outcome.storedEvents.count)
            $0.eventsStoredSinceStart += UInt64(outcome.storedEvents.count)
            if let battery { $0.batteryPercent = battery }
            $0.lastStorageError = nil
        }
    }

    private func serial(in batch: PersistBatch) -> String? {
        for item in batch.items {
            if case .deviceInfo(let info, _) = item { return info.serial }
        }
        return nil
    }

    private func trace(_ event: GatewayTrace) {
        configuration.trace?(event)
    }
}
