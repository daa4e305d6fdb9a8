import LinkProtocol
import TetherPrimitives

/// A firmware model and a gateway session joined by a simulated BLE link under a manual clock.
///
/// Values travel with a latency per direction (asymmetric if asked), in order, through `ChannelFaults`; persist
/// batches complete in a `MemoryEventStore` after a store latency; timers of both sides fire at their deadlines.
/// Everything random comes from one seed, so a run is reproducible. The pair records a transcript of what each
/// side received and checks the core invariants as it goes: nothing ACKed before it was stored, nothing stored twice.
public struct LinkPair: Sendable {
    public struct Configuration: Sendable {
        public var mtu = 23
        public var gatewayToDeviceLatency: Duration = .milliseconds(15)
        public var deviceToGatewayLatency: Duration = .milliseconds(15)
        /// Extra random delay per value, 0 ..< jitter (order is still kept, as BLE keeps it).
        public var jitter: Duration = .zero
        public var persistLatency: Duration = .milliseconds(5)
        /// How long the gateway waits to reconnect after a link loss.
        public var reconnectDelay: Duration = .seconds(1)
        public var deviceToGateway = ChannelFaults.none
        public var gatewayToDevice = ChannelFaults.none
        public var session = LinkSessionConfiguration()
        public var desiredConfig: DeviceConfig?

        public init() {}
    }

    public enum ScriptedAction: Hashable, Sendable {
        case hit(durationMilliseconds: UInt16, intensity: UInt8)
        case reboot
        /// The link drops (out of range, interference).
        case linkLoss
        case battery(BatteryStatus)
        case sleep(SleepNotice.Reason, wakeAfterSeconds: UInt32)
        /// The store refuses every batch until this long from now (disk full, §8.10).
        case storageFull(for: Duration)
        /// From now on, the channels have these faults.
        case setFaults(deviceToGateway: ChannelFaults, gatewayToDevice: ChannelFaults)
        case setDesiredConfig(DeviceConfig)
    }

    public private(set) var now: Timestamp
    public private(set) var firmware: DeviceModel
    public private(set) var session: LinkSession
    public private(set) var store = MemoryEventStore()
    public private(set) var configuration: Configuration
    public private(set) var transcript: [TranscriptEntry] = []
    /// Every event the firmware recorded (full-width key).
    public private(set) var createdEvents: Set<EventKey> = []
    /// Events the firmware forgot because they were ACKed.
    public private(set) var releasedEvents: Set<EventKey> = []
    /// Invariant violations seen: an event released by an ACK while the store did not have it.
    public private(set) var ackedBeforeStored: [EventKey] = []
    /// Invariant violations seen: a CONFIG_DATA report the device saw ACKed whose version the store never took.
    public private(set) var reportsAckedBeforeStored: [UInt32] = []
    public private(set) var reports: [LinkReport] = []
    public private(set) var connections = 0

    private var random: SplitMix64
    private var queue: [Scheduled] = []
    private var nextOrder = 0
    private var sessionTimers: [LinkTimer: Timestamp] = [:]
    private var connected = false
    /// Incremented at every link loss, so values in flight on a dead link are not delivered.
    private var linkEpoch = 0
    private var lastDelivery: [Direction: Timestamp] = [:]
    private var storageFullUntil: Timestamp?
    private var sleepingUntil: Timestamp?

    public init(firmware profile: DeviceProfile, configuration: Configuration = Configuration(), seed: UInt64, start: Timestamp, driftPPM: Double = 0, bootCounter: UInt16 = 1) {
        self.now = start
        self.configuration = configuration
        self.random = SplitMix64(seed: seed)
        self.firmware = DeviceModel(profile: profile, bootCounter: bootCounter, driftPPM: driftPPM, bootedAt: start)
        self.session = LinkSession(configuration: configuration.session, desiredConfig: configuration.desiredConfig)
        schedule(.connect, at: start)
    }

    // MARK: - Scripting

    public mutating func schedule(_ action: ScriptedAction, at instant: Timestamp) {
        schedule(.script(action), at: instant)
    }

    /// `count` hits, one every `interval` from `start`, with durations and intensities drawn from the seed.
    public mutating func scheduleHits(count: Int, every interval: Duration, from start: Timestamp) {
        for index in 0..<count {
            let duration = UInt16.random(in: 300...4000, using: &random)
            let intensity = UInt8.random(in: 10...100, using: &random)
            schedule(.hit(durationMilliseconds: duration, intensity: intensity), at: start.advanced(by: interval * index))
        }
    }

    // MARK: - Running

    /// Runs every step due up to and including `deadline`.
    public mutating func run(until deadline: Timestamp) {
        while let (instant, step) = nextStep(notAfter: deadline) {
            now = max(now, instant)
            perform(step)
        }
        now = max(now, deadline)
    }

    public mutating func run(for duration: Duration) { run(until: now.advanced(by: duration)) }

    /// Whether every event the firmware recorded is stored and released, and nothing is in flight.
    public var isSettled: Bool {
        firmware.eventStore.isEmpty && createdEvents.allSatisfy { store.contains($0) }
    }

    // MARK: - Steps

    private enum Direction: Hashable { case toGateway, toDevice }

    private enum Step: Sendable {
        case connect
        case deliverToGateway([UInt8], epoch: Int)
        case deliverToDevice([UInt8], epoch: Int)
        case persistDone(PersistBatch)
        case script(ScriptedAction)
    }

    private struct Scheduled: Sendable {
        var at: Timestamp
        var order: Int
        var step: Step
    }

    /// Keeps `queue` sorted by (instant, order), so the next step is always its first element.
    private mutating func schedule(_ step: Step, at instant: Timestamp) {
        let item = Scheduled(at: instant, order: nextOrder, step: step)
        nextOrder += 1
        var low = 0
        var high = queue.count
        while low < high {
            let middle = (low + high) / 2
            if queue[middle].at <= instant { low = middle + 1 } else { high = middle }
        }
        queue.insert(item, at: low)
    }

    private enum Due {
        case queued(Int)
        case sessionTimer(LinkTimer)
        case firmwareTimeout
    }

    private mutating func nextStep(notAfter deadline: Timestamp) -> (Timestamp, Due)? {
        var best: (Timestamp, Int, Due)?
        func consider(_ instant: Timestamp, _ order: Int, _ due: Due) {
            guard instant <= deadline else { return }
            if let current = best, (current.0, current.1) <= (instant, order) { return }
            best = (instant, order, due)
        }
        if let first = queue.first { consider(first.at, first.order, .queued(0)) }
        // Timers sort after queued steps of the same instant, in a fixed order, so runs are reproducible.
        for (rank, timer) in LinkTimer.allCases.enumerated() {
            if let instant = sessionTimers[timer] { consider(instant, Int.max - 10 + rank, .sessionTimer(timer)) }
        }
        if connected, let instant = firmware.nextDeadline { consider(instant, Int.max, .firmwareTimeout) }
        return best.map { ($0.0, $0.2) }
    }

    private mutating func perform(_ due: Due) {
        switch due {
        case .queued(let index):
            let item = queue.remove(at: index)
            perform(item.step)
        case .sessionTimer(let timer):
            sessionTimers[timer] = nil
            apply(session.timerFired(timer, at: now))
        case .firmwareTimeout:
            applyFirmware(firmware.handleTimeout(at: now))
        }
    }

    private mutating func perform(_ step: Step) {
        switch step {
        case .connect:
            guard !connected else { return }
            if let sleepingUntil, sleepingUntil > now {
                schedule(.connect, at: sleepingUntil)
                return
            }
            connected = true
            connections += 1
            linkEpoch += 1
            transcript.append(TranscriptEntry(at: now, event: .connected(mtu: configuration.mtu)))
            firmware.connected(mtu: configuration.mtu, at: now)
            apply(session.connected(mtu: configuration.mtu, at: now))
        case .deliverToGateway(let value, let epoch):
            guard epoch == linkEpoch, connected else { return }
            transcript.append(TranscriptEntry(at: now, event: .deviceToGateway(value)))
            apply(session.received(value, at: now))
        case .deliverToDevice(let value, let epoch):
            guard epoch == linkEpoch, connected else { return }
            transcript.append(TranscriptEntry(at: now, event: .gatewayToDevice(value)))
            applyFirmware(firmware.received(value, at: now))
        case .persistDone(let batch):
            if let until = storageFullUntil, until > now {
                apply(session.persistFailed(batch.id, reason: .storageFull, at: now))
                return
            }
            store.apply(batch)
            apply(session.persisted(batch.id, at: now))
        case .script(let action):
            perform(action)
        }
    }

    private mutating func perform(_ action: ScriptedAction) {
        switch action {
        case .hit(let duration, let intensity):
            let (event, actions) = firmware.recordHit(durationMilliseconds: duration, intensity: intensity, at: now)
            if let event {
                createdEvents.insert(EventKey(serial: firmware.profile.serial, bootCounter: event.bootCounter, sequence: Int64(event.eventSequence)))
            }
            applyFirmware(actions)
        case .reboot:
            firmware.reboot(at: now)
            loseLink(reconnectAfter: configuration.reconnectDelay)
        case .linkLoss:
            firmware.disconnected(at: now)
            loseLink(reconnectAfter: configuration.reconnectDelay)
        case .battery(let status):
            applyFirmware(firmware.batteryChanged(status, at: now))
        case .sleep(let reason, let wake):
            sleepingUntil = now.advanced(by: .seconds(Int64(wake)))
            applyFirmware(firmware.requestSleep(reason, wakeAfterSeconds: wake, at: now))
        case .storageFull(let duration):
            storageFullUntil = now.advanced(by: duration)
            transcript.append(TranscriptEntry(at: now, event: .storageFull(duration)))
        case .setFaults(let toGateway, let toDevice):
            configuration.deviceToGateway = toGateway
            configuration.gatewayToDevice = toDevice
        case .setDesiredConfig(let config):
            apply(session.desiredConfigChanged(config, at: now))
        }
    }

    private mutating func loseLink(reconnectAfter delay: Duration) {
        guard connected else { return }
        connected = false
        linkEpoch += 1
        transcript.append(TranscriptEntry(at: now, event: .disconnected))
        apply(session.disconnected(at: now))
        schedule(.connect, at: now.advanced(by: delay))
    }

    private mutating func apply(_ actions: [LinkAction]) {
        var writes: [[UInt8]] = []
        for action in actions {
            switch action {
            case .write(let value):
                writes.append(value)
            case .persist(let batch):
                schedule(.persistDone(batch), at: now.advanced(by: configuration.persistLatency))
            case .armTimer(let timer, let instant):
                sessionTimers[timer] = instant
            case .cancelTimer(let timer):
                sessionTimers[timer] = nil
            case .disconnect:
                firmware.disconnected(at: now)
                loseLink(reconnectAfter: configuration.reconnectDelay * 5)
            case .report(let report):
                reports.append(report)
            }
        }
        send(writes, direction: .toDevice)
    }

    private mutating func applyFirmware(_ actions: [DeviceAction]) {
        var notifications: [[UInt8]] = []
        for action in actions {
            switch action {
            case .notify(let value):
                notifications.append(value)
            case .disconnect:
                send(notifications, direction: .toGateway)
                notifications = []
                loseLink(reconnectAfter: configuration.reconnectDelay)
            case .released(let events):
                for event in events {
                    let key = EventKey(serial: firmware.profile.serial, bootCounter: event.bootCounter, sequence: Int64(event.eventSequence))
                    releasedEvents.insert(key)
                    // §8.2: the device may forget an event only once it is durably stored.
                    if !store.contains(key) { ackedBeforeStored.append(key) }
                }
            case .settings(.reportAcknowledged(let version, _)):
                // §8.2 for settings: the device forgets its report on the ACK, so the store must have it.
                if !store.reportedVersions.contains(version) { reportsAckedBeforeStored.append(version) }
            case .settings:
                break
            }
        }
        send(notifications, direction: .toGateway)
    }

    private mutating func send(_ values: [[UInt8]], direction: Direction) {
        guard connected, !values.isEmpty else { return }
        let faults = direction == .toGateway ? configuration.deviceToGateway : configuration.gatewayToDevice
        let latency = direction == .toGateway ? configuration.deviceToGatewayLatency : configuration.gatewayToDeviceLatency
        let valueSize = FrameEncoder.attValueSize(mtu: configuration.mtu)
        for value in faults.apply(to: values, valueSize: valueSize, using: &random) {
            var arrival = now.advanced(by: latency)
            if configuration.jitter > .zero {
                arrival = arrival.advanced(by: .nanoseconds(Int64.random(in: 0..<configuration.jitter.nanoseconds, using: &random)))
            }
            // BLE delivers in order: never before the previous value of the same direction.
            arrival = max(arrival, lastDelivery[direction] ?? arrival)
            lastDelivery[direction] = arrival
            switch direction {
            case .toGateway: schedule(.deliverToGateway(value, epoch: linkEpoch), at: arrival)
            case .toDevice: schedule(.deliverToDevice(value, epoch: linkEpoch), at: arrival)
            }
        }
    }
}
