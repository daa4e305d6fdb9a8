import LinkProtocol
import TetherPrimitives

/// A consumption device's firmware, modelled on the same codec as the gateway and, like it, sans I/O.
///
/// It keeps events in a bounded non-volatile store until they are acknowledged (§8.1), retransmits on its timer
/// with backoff (§8.4), follows NACK rules (§8.5), answers time sync from its own drifting clock (§9), holds its
/// settings (§7.11), and reboots (boot counter + 1, ticks from zero, events kept). Inputs are facts with the true
/// time they happen at; outputs are `DeviceAction`s; `nextDeadline` says when `handleTimeout` is due.
public struct DeviceModel: Sendable {
    public let profile: DeviceProfile
    public private(set) var bootCounter: UInt16
    public private(set) var clock: DriftingClock
    /// Unacknowledged events, oldest first. Survives reboots and disconnects.
    public private(set) var eventStore: [HitEvent] = []
    public private(set) var config: DeviceConfig
    public private(set) var battery = BatteryStatus(millivolts: 3950, percent: 82, isCharging: false)
    /// Events the device could not record because its store was full.
    public private(set) var refusedEvents = 0
    /// Frames retransmitted in all, for tests and statistics.
    public private(set) var retransmissions = 0
    private var nextEventSequence: UInt32 = 0
    private var link: Link?

    public init(profile: DeviceProfile, bootCounter: UInt16 = 1, driftPPM: Double = 0, bootedAt: Timestamp) {
        self.profile = profile
        self.bootCounter = bootCounter
        self.clock = DriftingClock(driftPPM: driftPPM, bootedAt: bootedAt)
        self.config = profile.initialConfig
    }

    public var isConnected: Bool { link != nil }
    /// Whether a reliable message (a hit, a config report, ...) is queued or waiting for its ACK on this link.
    public var hasUnacknowledgedMessages: Bool {
        guard let link else { return false }
        return !link.inFlight.isEmpty || !link.queue.isEmpty
    }
    /// The version agreed in this connection, once HELLO has arrived.
    public var negotiatedVersion: UInt8? { link?.version }

    // MARK: - Device-side facts

    /// The user took a hit. Returns the recorded event, or `nil` when the store is full (the event is lost on the
    /// device, never silently on the gateway).
    public mutating func recordHit(durationMilliseconds: UInt16, intensity: UInt8, at now: Timestamp) -> (HitEvent?, [DeviceAction]) {
        guard eventStore.count < profile.eventStoreCapacity else {
            refusedEvents += 1
            return (nil, [])
        }
        let event = HitEvent(
            eventSequence: nextEventSequence, bootCounter: bootCounter, ticks: clock.wireTicks(at: now),
            durationMilliseconds: durationMilliseconds, intensity: min(intensity, 100))
        nextEventSequence &+= 1
        eventStore.append(event)
        return (event, pump(at: now))
    }

    public mutating func batteryChanged(_ status: BatteryStatus, at now: Timestamp) -> [DeviceAction] {
        battery = status
        guard link?.version != nil else { return [] }
        link!.queue.append(.battery(status))
        return pump(at: now)
    }

    /// The device wants to sleep: it says so (§7.7) and disconnects when that is ACKed or after the grace period.
    public mutating func requestSleep(_ reason: SleepNotice.Reason, wakeAfterSeconds: UInt32?, at now: Timestamp) -> [DeviceAction] {
        guard link?.version != nil else { return [] }
        link!.queue.append(.sleep(SleepNotice(reason: reason, wakeAfterSeconds: wakeAfterSeconds)))
        link!.sleepDeadline = now.advanced(by: profile.sleepGrace)
        return pump(at: now)
    }

    /// Power cycle: boot counter + 1, ticks from zero, event sequence from zero, the link gone, the store kept.
    public mutating func reboot(at now: Timestamp) {
        bootCounter &+= 1
        clock.reboot(at: now)
        nextEventSequence = 0
        link = nil
    }

    // MARK: - Link facts

    /// The central connected and enabled notifications. The device waits for HELLO (§2.2).
    public mutating func connected(mtu: Int, at now: Timestamp) {
        link = Link(valueSize: FrameEncoder.attValueSize(mtu: mtu))
    }

    public mutating func disconnected(at now: Timestamp) {
        link = nil
    }

    /// One ATT write from the gateway.
    public mutating func received(_ value: some Collection<UInt8>, at now: Timestamp) -> [DeviceAction] {
        guard link != nil else { return [] }
        link!.decoder.append(value)
        var actions: [DeviceAction] = []
        while link != nil {
            do {
                guard let frame = try link!.decoder.decode() else { break }
                actions += handle(frame, at: now)
            } catch {
                if let sequence = error.sequence, let reason = error.nackReason {
                    sendUnreliable(.nack(Nack(sequence: sequence, reason: reason)))
                }
            }
        }
        return actions + pump(at: now)
    }

    /// When `handleTimeout` must run next, if anything is pending.
    public var nextDeadline: Timestamp? {
        guard let link else { return nil }
        let retransmit = link.inFlight.map(\.deadline).min()
        return [retransmit, link.sleepDeadline].compactMap { $0 }.min()
    }

    public mutating func handleTimeout(at now: Timestamp) -> [DeviceAction] {
        guard link != nil else { return [] }
        if let sleepDeadline = link!.sleepDeadline, sleepDeadline <= now {
            link = nil
            return [.disconnect]
        }
        for index in link!.inFlight.indices where link!.inFlight[index].deadline <= now {
            // §8.4: same number, RETRANSMIT flag, timeout doubled up to the cap.
            let timeout = min(link!.inFlight[index].timeout * 2, profile.maximumRetransmissionTimeout)
            link!.inFlight[index].timeout = timeout
            link!.inFlight[index].deadline = now.advanced(by: timeout)
            transmit(link!.inFlight[index].item, sequence: link!.inFlight[index].sequence, flags: .retransmit)
            retransmissions += 1
        }
        return pump(at: now)
    }

    // MARK: - Frames from the gateway

    private mutating func handle(_ frame: Frame, at now: Timestamp) -> [DeviceAction] {
        let message: LinkMessage
        do {
            message = try LinkMessage(frame: frame)
        } catch {
            sendUnreliable(.nack(Nack(sequence: frame.header.sequence, reason: error.nackReason ?? .malformed)))
            return []
        }
        switch message {
        case .hello(let hello):
            return acceptHello(hello, sequence: frame.header.sequence, at: now)
        case .ack(let ack):
            return acknowledge(ack, at: now)
        case .nack(let nack):
            applyNack(nack, at: now)
            return []
        case .timeSyncRequest:
            guard link!.version != nil else { return [] }
            // §7.9: both ticks are read when the request is handled; the model answers at once.
            let ticks = clock.wireTicks(at: now)
            sendUnreliable(.timeSyncResponse(TimeSyncResponse(requestSequence: frame.header.sequence, bootCounter: bootCounter, receiveTicks: ticks, transmitTicks: ticks)))
            return []
        case .getConfig:
            queueConfigReport(at: now)
            return []
        case .setConfig(let requested):
            do {
                try requested.settings.validate()
            } catch {
                sendUnreliable(.nack(Nack(sequence: frame.header.sequence, reason: .invalidValue, detail: [error.key])))
                return [.settings(.setConfigRefused(version: requested.version, sequence: frame.header.sequence, key: error.key))]
            }
            config = DeviceConfig(version: requested.version, settings: config.settings.overlaid(with: requested.settings))
            queueConfigReport(at: now)
            return [.settings(.setConfigApplied(config, sequence: frame.header.sequence))]
        case .deviceInfo, .hitEvent, .batteryStatus, .sleep, .timeSyncResponse, .configData:
            sendUnreliable(.nack(Nack(sequence: frame.header.sequence, reason: .malformed)))
            return []
        }
    }

    private mutating func acceptHello(_ hello: Hello, sequence: SequenceNumber, at now: Timestamp) -> [DeviceAction] {
        guard let version = ProtocolVersion.negotiate(profile.versions, hello.versions) else {
            // §6.4: say which versions we speak.
            sendUnreliable(.nack(Nack(sequence: sequence, reason: .unsupportedVersion, detail: [profile.versions.lowerBound, profile.versions.upperBound])))
            return []
        }
        if link!.version != nil {
            // A repeated HELLO: our DEVICE_INFO was lost or is late; send it again now (§8.7).
            if let index = link!.inFlight.firstIndex(where: { $0.item == .deviceInfo }) {
                transmit(link!.inFlight[index].item, sequence: link!.inFlight[index].sequence, flags: .retransmit)
                retransmissions += 1
            }
            return []
        }
        link!.version = version
        link!.window = max(1, min(profile.window, Int(hello.window)))
        link!.queue.insert(.deviceInfo, at: 0)
        if profile.sendsUnknownDiagnostics { link!.queue.append(.diagnostics) }
        return []
    }

    private mutating func acknowledge(_ ack: Ack, at now: Timestamp) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        var released: [HitEvent] = []
        var sleepAcknowledged = false
        link!.inFlight.removeAll { frame in
            guard ack.covers(frame.sequence) else { return false }
            switch frame.item {
            case .event(let event): released.append(event)
            case .sleep: sleepAcknowledged = true
            case .config(let config): actions.append(.settings(.reportAcknowledged(version: config.version, sequence: frame.sequence)))
            case .deviceInfo, .battery, .diagnostics: break
            }
            return true
        }
        let releasedKeys = Set(released.map { EventID(bootCounter: $0.bootCounter, sequence: $0.eventSequence) })
        eventStore.removeAll { releasedKeys.contains(EventID(bootCounter: $0.bootCounter, sequence: $0.eventSequence)) }
        if sleepAcknowledged { link!.sleepDeadline = now }  // §7.7: ACKed, so go now
        if !released.isEmpty { actions.append(.released(released)) }
        if let deadline = link!.sleepDeadline, deadline <= now {
            link = nil
            return actions + [.disconnect]
        }
        return actions
    }

    private mutating func applyNack(_ nack: Nack, at now: Timestamp) {
        guard let index = link!.inFlight.firstIndex(where: { $0.sequence == nack.sequence }) else { return }
        switch nack.reason.senderAction {
        case .retransmitNow:
            transmit(link!.inFlight[index].item, sequence: nack.sequence, flags: .retransmit)
            retransmissions += 1
        case .retransmitAtTimer:
            break
        case .retransmitAfterStorageBackoff:
            // §8.5: the gateway cannot store; hold everything, keep the events.
            let resume = now.advanced(by: profile.storageFullBackoff)
            link!.holdUntil = resume
            for other in link!.inFlight.indices { link!.inFlight[other].deadline = max(link!.inFlight[other].deadline, resume) }
        case .release:
            let frame = link!.inFlight.remove(at: index)
            if case .event(let event) = frame.item {
                // The gateway will never take this event; keeping it would block the store forever.
                eventStore.removeAll { $0.bootCounter == event.bootCounter && $0.eventSequence == event.eventSequence }
            }
        }
    }

    /// A CONFIG_DATA report of the current config (§7.11), after GET_CONFIG or an applied SET_CONFIG.
    ///
    /// A report already sent is never rewritten: a retransmission keeps its frame's sequence number (§8.4), and the
    /// gateway takes a repeated number for the frame it already has (§8.3, §8.8), so newer settings sent under the
    /// old number are ACKed without being stored, and the ACK of the older report reads as the newer one's. (That
    /// lost the report of version 2 in a VM run: the gateway sends SET_CONFIG as soon as the first report arrives,
    /// before that report's ACK.) The newer report is a frame of its own; only one not yet sent is replaced.
    private mutating func queueConfigReport(at now: Timestamp) {
        guard link!.version != nil else { return }
        // §8.7: a report still waiting for room in the window answers a repeated request too.
        if let index = link!.queue.firstIndex(where: { if case .config = $0 { true } else { false } }) {
            link!.queue[index] = .config(config)
        } else {
            link!.queue.append(.config(config))
        }
    }

    // MARK: - Sending

    /// Sends queued reliable frames and stored events while the window has room (§8.6).
    private mutating func pump(at now: Timestamp) -> [DeviceAction] {
        guard link?.version != nil else { return flush() }
        if let hold = link!.holdUntil, hold > now { return flush() }
        while link!.inFlight.count < link!.window {
            let item: OutboundItem
            if !link!.queue.isEmpty {
                item = link!.queue.removeFirst()
            } else if let event = eventStore.first(where: { event in !link!.inFlight.contains { $0.item == .event(event) } }) {
                item = .event(event)
            } else {
                break
            }
            let sequence = link!.nextSequence
            link!.nextSequence = sequence.next
            link!.inFlight.append(InFlight(item: item, sequence: sequence, timeout: profile.initialRetransmissionTimeout, deadline: now.advanced(by: profile.initialRetransmissionTimeout)))
            transmit(item, sequence: sequence, flags: [])
        }
        return flush()
    }

    private mutating func transmit(_ item: OutboundItem, sequence: SequenceNumber, flags: FrameFlags) {
        let version = link!.version ?? ProtocolVersion.helloHeaderVersion
        switch item {
        case .deviceInfo:
            LinkMessage.deviceInfo(DeviceInfo(hardwareRevision: profile.hardwareRevision, firmware: profile.firmware, bootCounter: bootCounter, capabilities: profile.capabilities, versions: profile.versions, serial: profile.serial))
                .append(version: version, sequence: sequence, flags: flags, to: &link!.outgoing)
        case .event(let event):
            LinkMessage.hitEvent(event).append(version: version, sequence: sequence, flags: flags, to: &link!.outgoing)
        case .battery(let status):
            LinkMessage.batteryStatus(status).append(version: version, sequence: sequence, flags: flags, to: &link!.outgoing)
        case .sleep(let notice):
            LinkMessage.sleep(notice).append(version: version, sequence: sequence, flags: flags, to: &link!.outgoing)
        case .config(let config):
            LinkMessage.configData(config).append(version: version, sequence: sequence, flags: flags, to: &link!.outgoing)
            link!.facts.append(.reportSent(config, sequence: sequence, retransmission: flags.contains(.retransmit)))
        case .diagnostics:
            // Type 0x13: reliable (bit 7 clear) and unknown to gateways that speak versions 1 and 2.
            FrameEncoder.append(version: version, type: Self.diagnosticsType, flags: flags, sequence: sequence, payload: [0x01, 0x00, 0x2A, 0x00, 0x00, 0x00], to: &link!.outgoing)
        }
    }

    /// Unreliable frames carry the next number without taking it (§5.1).
    private mutating func sendUnreliable(_ message: LinkMessage) {
        let version = link!.version ?? ProtocolVersion.helloHeaderVersion
        message.append(version: version, sequence: link!.nextSequence, to: &link!.outgoing)
    }

    private mutating func flush() -> [DeviceAction] {
        guard link != nil else { return [] }
        let facts = link!.facts.map(DeviceAction.settings)
        link!.facts.removeAll()
        guard !link!.outgoing.isEmpty else { return facts }
        defer { link!.outgoing.removeAll(keepingCapacity: true) }
        return FrameEncoder.segments(of: link!.outgoing, valueSize: link!.valueSize).map(DeviceAction.notify) + facts
    }

    /// The diagnostics type firmware 2.x sends (§6.6 test).
    public static let diagnosticsType: UInt8 = 0x13
}

/// An order from the firmware model.
public enum DeviceAction: Hashable, Sendable {
    /// Send one ATT notification on TX.
    case notify([UInt8])
    /// The device drops the link (after SLEEP).
    case disconnect
    /// These events were acknowledged and left the device's store.
    case released([HitEvent])
    /// Settings traffic (§7.11), for the device's log; changes nothing.
    case settings(SettingsFact)
}

/// What the device did with settings, so a run whose reported version went astray explains itself.
public enum SettingsFact: Hashable, Sendable {
    /// SET_CONFIG accepted: `config` is now the device's.
    case setConfigApplied(DeviceConfig, sequence: SequenceNumber)
    /// SET_CONFIG refused with NACK `invalidValue` on `key`; nothing applied.
    case setConfigRefused(version: UInt32, sequence: SequenceNumber, key: UInt8)
    /// A CONFIG_DATA frame went out (again, when `retransmission`).
    case reportSent(DeviceConfig, sequence: SequenceNumber, retransmission: Bool)
    /// The gateway's ACK covered the CONFIG_DATA frame that reported `version`.
    case reportAcknowledged(version: UInt32, sequence: SequenceNumber)
}

extension DeviceModel {
    enum OutboundItem: Hashable, Sendable {
        case deviceInfo
        case event(HitEvent)
        case battery(BatteryStatus)
        case sleep(SleepNotice)
        case config(DeviceConfig)
        case diagnostics
    }

    struct EventID: Hashable {
        var bootCounter: UInt16
        var sequence: UInt32
    }

    struct InFlight: Sendable {
        var item: OutboundItem
        var sequence: SequenceNumber
        var timeout: Duration
        var deadline: Timestamp
    }

    /// Everything of one connection; lost on disconnect and reboot.
    struct Link: Sendable {
        var valueSize: Int
        var decoder = FrameDecoder()
        var version: UInt8?
        var window = 1
        var nextSequence = SequenceNumber(0)
        var inFlight: [InFlight] = []
        var queue: [OutboundItem] = []
        var outgoing: [UInt8] = []
        /// Settings facts of this step, returned with its notifications.
        var facts: [SettingsFact] = []
        var holdUntil: Timestamp?
        var sleepDeadline: Timestamp?

        init(valueSize: Int) { self.valueSize = valueSize }
    }
}
