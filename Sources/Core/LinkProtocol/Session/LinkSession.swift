import TetherPrimitives
/// The gateway side of the device link protocol for one device, sans I/O.
///
/// Facts go in (`connected`, `received`, `persisted`, `timerFired`, `disconnected`, each with the instant it
/// happened); orders come out as `LinkAction`s (`write`, `persist`, `armTimer`, `disconnect`, `report`). The session
/// owns no socket, no database and no clock, so tests, replays and the daemon drive the very same code.
///
/// One session lives as long as the gateway cares about the device, across connections: the dedup history and
/// the clock anchors carry over, everything of one connection is dropped on `disconnected`.
public struct LinkSession: Sendable {
    public enum Phase: Hashable, Sendable {
        case idle
        /// HELLO sent, waiting for DEVICE_INFO (§11).
        case hello
        case established(version: UInt8)
        /// Disconnect ordered; waiting for `disconnected`.
        case closing
    }

    public let configuration: LinkSessionConfiguration
    public private(set) var phase: Phase = .idle
    public private(set) var history: DeviceHistory
    public private(set) var clock: DeviceClock
    public private(set) var deviceInfo: DeviceInfo?
    public private(set) var reportedConfig: DeviceConfig?
    public private(set) var desiredConfig: DeviceConfig?

    private var connection: Connection?
    private var nextBatchID: PersistBatch.ID = 1
    /// Events whose store is in progress, and the batch that carries each. Kept outside the connection: a store
    /// that completes after a disconnect still stored them (the history must learn it), and a retransmission on
    /// the next connection must wait for that store instead of starting a second one (§8.8).
    private var inFlightEvents: [EventKey: PersistBatch.ID] = [:]
    private var batchEvents: [PersistBatch.ID: [EventKey]] = [:]
    /// Anchors in a batch whose store has not completed, and anchors whose batch was refused: a refused anchor
    /// rides along with the next batch, so the store's clock never lacks one that event times were derived from.
    private var batchAnchors: [PersistBatch.ID: [TimeAnchor]] = [:]
    private var unsavedAnchors: [TimeAnchor] = []
    private var actions: [LinkAction] = []

    public init(configuration: LinkSessionConfiguration = LinkSessionConfiguration(), history: DeviceHistory = DeviceHistory(), clock: DeviceClock = DeviceClock(), desiredConfig: DeviceConfig? = nil) {
        self.configuration = configuration
        self.history = history
        self.clock = clock
        self.desiredConfig = desiredConfig
    }

    // MARK: - Inputs

    /// The BLE link is up and the gateway is subscribed to TX (§2.2).
    public mutating func connected(mtu: Int, at now: LinkInstant) -> [LinkAction] {
        switch phase {
        case .idle:
            break
        case .hello, .established, .closing:
            // A new link without a disconnect in between (bluetoothd restarted under us): the old one is gone.
            closeConnection()
        }
        connection = Connection(valueSize: FrameEncoder.attValueSize(mtu: mtu), windowSize: Int(configuration.window))
        phase = .hello
        // §2.2: the gateway speaks first, after subscribing.
        startRequest(.hello(Hello(versions: configuration.versions, window: configuration.window)), at: now)
        return drainActions()
    }

    /// BlueZ reported a new MTU.
    public mutating func mtuChanged(_ mtu: Int) {
        connection?.valueSize = FrameEncoder.attValueSize(mtu: mtu)
    }

    /// One ATT notification from TX.
    public mutating func received(_ value: [UInt8], at now: LinkInstant) -> [LinkAction] {
        receivedSpecialized(value, at: now)
    }

    /// One ATT notification from TX, from any byte collection.
    public mutating func received(_ value: some Collection<UInt8>, at now: LinkInstant) -> [LinkAction] {
        receivedSpecialized(value, at: now)
    }

    // A concrete `[UInt8]` entry point: called across modules, the generic one runs unspecialised (measured: a
    // quarter of the decode time went to witness calls).
    @inline(__always)
    private mutating func receivedSpecialized(_ value: some Collection<UInt8>, at now: LinkInstant) -> [LinkAction] {
        switch phase {
        case .idle, .closing:
            return []  // bytes after we gave the link up carry nothing we may act on
        case .hello, .established:
            break
        }
        let dropped = connection!.decoder.append(value)
        if dropped > 0 { actions.append(.report(.bufferOverrun(droppedBytes: dropped))) }
        decodeBuffered(at: now)
        return drainActions()
    }

    /// The store committed a batch durably: its frames may now be acknowledged (§8.2).
    public mutating func persisted(_ batch: PersistBatch.ID, at now: LinkInstant) -> [LinkAction] {
        for key in batchEvents.removeValue(forKey: batch) ?? [] {
            history.markStored(key)
            inFlightEvents.removeValue(forKey: key)
        }
        batchAnchors.removeValue(forKey: batch)
        guard var connection, let frames = connection.awaiting.removeValue(forKey: batch) else {
            return drainActions()  // no frame of this link waits for it; the device will retransmit and be re-ACKed
        }
        for frame in frames { connection.window.markHandled(frame) }
        self.connection = connection
        if !frames.isEmpty { sendAck() }
        flushWrites()
        return drainActions()
    }

    /// The store could not commit a batch (§8.10): nothing in it is acknowledged; the device keeps it.
    public mutating func persistFailed(_ batch: PersistBatch.ID, reason: StorageFailure, at now: LinkInstant) -> [LinkAction] {
        for key in batchEvents.removeValue(forKey: batch) ?? [] { inFlightEvents.removeValue(forKey: key) }
        unsavedAnchors += batchAnchors.removeValue(forKey: batch) ?? []
        guard var connection, let frames = connection.awaiting.removeValue(forKey: batch) else {
            return drainActions()
        }
        for frame in frames { connection.window.abandon(frame) }
        self.connection = connection
        switch reason {
        case .storageFull:
            for frame in frames { sendNack(Nack(sequence: frame, reason: .storageFull)) }
            actions.append(.report(.storageRefused(frames: frames.count)))
        }
        flushWrites()
        return drainActions()
    }

    public mutating func timerFired(_ timer: LinkTimer, at now: LinkInstant) -> [LinkAction] {
        guard connection != nil, phase != .closing else { return [] }
        switch timer {
        case .request: retryRequest(at: now)
        case .timeSync: advanceTimeSync(at: now)
        case .stall:
            connection!.stallArmed = false
            if let error = connection!.decoder.abandonStalledFrame() { reject(error) }
            decodeBuffered(at: now)
        }
        flushWrites()
        return drainActions()
    }

    /// The link is down. Unacknowledged frames are the device's to resend (§11).
    public mutating func disconnected(at now: LinkInstant) -> [LinkAction] {
        closeConnection()
        phase = .idle
        return drainActions()
    }

    /// Settings a technician or the backend wants on the device (§7.11). Sent now if connected, else on connect.
    /// Settings outside §7.11's ranges are refused here, with the key named, and never sent.
    public mutating func desiredConfigChanged(_ config: DeviceConfig, at now: LinkInstant) -> [LinkAction] {
        do {
            try config.settings.validate()
        } catch {
            actions.append(.report(.desiredConfigRefused(version: config.version, error)))
            return drainActions()
        }
        desiredConfig = config
        if case .established = phase { applyDesiredConfigIfNeeded(at: now) }
        flushWrites()
        return drainActions()
    }

    // MARK: - Decoding

    private mutating func decodeBuffered(at now: LinkInstant) {
        var batch = BatchBuilder()
        var ackDue = false
        while connection != nil {
            do {
                guard let frame = try connection!.decoder.decode() else { break }
                handle(frame, at: now, batch: &batch, ackDue: &ackDue)
            } catch {
                reject(error)
            }
        }
        guard connection != nil else { return }
        if !batch.isEmpty { submit(batch) }
        if ackDue { sendAck() }
        // §3.4: a partial frame must complete within the stall timeout.
        if connection!.decoder.bufferedByteCount > 0 {
            actions.append(.armTimer(.stall, at: now.advanced(by: configuration.stallTimeout)))
            connection!.stallArmed = true
        } else if connection!.stallArmed {
            actions.append(.cancelTimer(.stall))
            connection!.stallArmed = false
        }
        flushWrites()
    }

    /// Bytes that were not a frame: NACK what can be named, report the rest (§3.3, §4.3).
    private mutating func reject(_ error: FrameError) {
        var nack: Nack?
        if let sequence = error.sequence, let reason = error.nackReason {
            nack = Nack(sequence: sequence, reason: reason)
            sendNack(nack!)
        }
        actions.append(.report(.rejected(error, nack: nack)))
    }

    private mutating func handle(_ frame: Frame, at now: LinkInstant, batch: inout BatchBuilder, ackDue: inout Bool) {
        let header = frame.header
        let sequence = header.sequence
        let consumesSequence = MessageType.consumesDeviceSequence(typeCode: header.type)

        // A rejection the device must not retry (§8.5 "releases it") still has to free its slot in the window,
        // or the cumulative ACK would stop at it forever (§6.6).
        func release(_ reason: NackReason, _ error: FrameError) {
            let nack = Nack(sequence: sequence, reason: reason, detail: reason == .unsupportedVersion ? [configuration.versions.lowerBound, configuration.versions.upperBound] : [])
            sendNack(nack)
            actions.append(.report(.rejected(error, nack: nack)))
            if consumesSequence, connection!.window.classify(sequence) == .new {
                connection!.window.markHandled(sequence)
                ackDue = true
            }
        }

        let message: LinkMessage
        do {
            message = try LinkMessage(frame: frame)
        } catch {
            release(error.nackReason ?? .malformed, error)
            return
        }
        guard message.type.isSentByDevice else {
            release(.malformed, FrameError(.malformed, sequence: sequence, type: header.type, reason: "\(message.type) is sent by the gateway, not the device"))
            return
        }
        if case .established(let version) = phase, header.version != version {
            // §6.5: every frame after the handshake carries the negotiated version.
            release(.unsupportedVersion, FrameError(.malformed, sequence: sequence, type: header.type, reason: "frame of version \(header.version) on a version-\(version) link"))
            return
        }

        if message.type.isReliable {
            let classification = connection!.window.classify(sequence)
            if classification == .inProgress || classification == .handled, case .configData(let config) = message {
                actions.append(.report(.settings(.configDataRepeated(config, sequence: sequence))))
            }
            switch classification {
            case .new:
                break
            case .inProgress:
                // A retransmission of a frame being stored: ACKed when the store completes (§8.8).
                actions.append(.report(.repeatedFrame(sequence)))
                return
            case .handled:
                ackDue = true  // our ACK was lost; say it again (§8.3)
                actions.append(.report(.repeatedFrame(sequence)))
                return
            case .outOfWindow:
                sendNack(Nack(sequence: sequence, reason: .outOfWindow))
                return
            }
        }

        switch (phase, message) {
        case (.hello, .deviceInfo(let info)):
            acceptDeviceInfo(info, frameVersion: header.version, sequence: sequence, at: now, batch: &batch)
        case (.hello, .nack(let nack)):
            handleNack(nack, at: now)
        case (.hello, .hitEvent), (.hello, .batteryStatus), (.hello, .sleep), (.hello, .configData):
            sendNack(Nack(sequence: sequence, reason: .busy))  // §11: not before the handshake
        case (.hello, .timeSyncResponse):
            break  // no request of ours can be outstanding yet
        case (.established, .deviceInfo(let info)):
            // A new DEVICE_INFO inside a connection: store it again and notice a reboot (§9.6).
            noteBoot(info.bootCounter, serial: info.serial)
            deviceInfo = info
            batch.add(.deviceInfo(info, negotiatedVersion: header.version), frame: sequence)
            connection!.window.markInProgress(sequence)
        case (.established, .hitEvent(let hit)):
            acceptHit(hit, version: header.version, sequence: sequence, at: now, batch: &batch, ackDue: &ackDue)
        case (.established, .batteryStatus(let status)):
            accept(.battery(serial: serial, status, receivedAt: now), sequence: sequence, batch: &batch)
        case (.established, .sleep(let notice)):
            accept(.sleep(serial: serial, notice, receivedAt: now), sequence: sequence, batch: &batch)
        case (.established, .configData(let config)):
            actions.append(.report(.settings(.configDataReceived(config, sequence: sequence))))
            reportedConfig = config
            accept(.reportedConfig(serial: serial, config), sequence: sequence, batch: &batch)
            completeConfigRequest(at: now)
        case (.established, .timeSyncResponse(let response)):
            acceptTimeSyncResponse(response, at: now)
        case (.established, .nack(let nack)):
            handleNack(nack, at: now)
        case (.idle, _), (.closing, _):
            break  // unreachable: `received` ignores bytes in these phases
        case (_, .hello), (_, .ack), (_, .timeSyncRequest), (_, .getConfig), (_, .setConfig):
            break  // unreachable: gateway-only types were rejected above
        }
    }

    private var serial: String { deviceInfo?.serial ?? history.serial ?? "" }

    // MARK: - Handshake (§6, §11)

    private mutating func acceptDeviceInfo(_ info: DeviceInfo, frameVersion: UInt8, sequence: SequenceNumber, at now: LinkInstant, batch: inout BatchBuilder) {
        // §6.1: the device chooses; its choice must lie in both ranges.
        guard configuration.versions.contains(frameVersion), info.versions.contains(frameVersion) else {
            sendNack(Nack(sequence: sequence, reason: .unsupportedVersion, detail: [configuration.versions.lowerBound, configuration.versions.upperBound]))
            closeForIncompatibility(device: info.versions)
            return
        }
        if let previous = history.serial, previous != info.serial {
            actions.append(.report(.identityChanged(previous: previous, now: info.serial)))
            history = DeviceHistory()
            clock = DeviceClock()
            reportedConfig = nil
        }
        history.serial = info.serial
        deviceInfo = info
        noteBoot(info.bootCounter, serial: info.serial)
        phase = .established(version: frameVersion)
        actions.append(.report(.negotiated(version: frameVersion, info)))
        finishRequest()  // the HELLO is answered
        batch.add(.deviceInfo(info, negotiatedVersion: frameVersion), frame: sequence)
        connection!.window.markInProgress(sequence)
        startTimeSyncBurst(at: now)
        enqueueRequest(.getConfig, at: now)
    }

    /// §9.6: a boot counter other than the latest one is a reboot (newer) or a late frame of an older boot.
    @discardableResult
    private mutating func noteBoot(_ boot: UInt16, serial: String) -> Bool {
        guard let latest = history.latestBoot else {
            history.latestBoot = boot
            return true
        }
        guard SequenceNumber(latest).distance(to: SequenceNumber(boot)) > 0 else { return false }
        history.latestBoot = boot
        actions.append(.report(.rebootDetected(serial: serial, previousBoot: latest, boot: boot)))
        return true
    }

    private mutating func closeForIncompatibility(device versions: ClosedRange<UInt8>) {
        closeConnection()  // flushes the NACK first: nothing may be written after the order to disconnect
        actions.append(.disconnect(.incompatibleVersions(device: versions)))
        phase = .closing
    }

    // MARK: - Events (§8)

    private mutating func acceptHit(_ hit: HitEvent, version: UInt8, sequence: SequenceNumber, at now: LinkInstant, batch: inout BatchBuilder, ackDue: inout Bool) {
        if noteBoot(hit.bootCounter, serial: serial) {
            startTimeSyncBurst(at: now)  // §9.1: a reboot we learn of from an event needs new anchors
        }
        let widened = history.widenSequence(hit.eventSequence, bits: HitEvent.sequenceBits(version: version), boot: hit.bootCounter)
        let key = EventKey(serial: serial, bootCounter: hit.bootCounter, sequence: widened)
        if history.isStored(key) {
            actions.append(.report(.duplicate(key)))
            connection!.window.markHandled(sequence)
            ackDue = true
            return
        }
        if let batchID = inFlightEvents[key] {
            // §8.8: the same event in another frame (or on a new link) while its store is in progress: this frame
            // is ACKed when that store completes.
            connection!.awaiting[batchID, default: []].append(sequence)
            connection!.window.markInProgress(sequence)
            actions.append(.report(.duplicate(key)))
            return
        }
        if batch.events.contains(key) {
            batch.frames.append(sequence)
            connection!.window.markInProgress(sequence)
            actions.append(.report(.duplicate(key)))
            return
        }
        let ticks = history.widenTicks(hit.ticks, boot: hit.bootCounter)
        let stored = StoredHit(
            key: key, ticks: ticks, durationMilliseconds: hit.durationMilliseconds, intensity: hit.intensity,
            receivedAt: now, time: clock.estimate(boot: hit.bootCounter, ticks: ticks))
        batch.add(.hit(stored), frame: sequence, event: key)
        connection!.window.markInProgress(sequence)
    }

    private mutating func accept(_ item: PersistItem, sequence: SequenceNumber, batch: inout BatchBuilder) {
        batch.add(item, frame: sequence)
        connection!.window.markInProgress(sequence)
    }

    private mutating func submit(_ batch: BatchBuilder) {
        var batch = batch
        for anchor in unsavedAnchors { batch.add(.anchor(serial: serial, anchor), frame: nil) }
        unsavedAnchors.removeAll()
        let anchors = batch.items.compactMap { if case .anchor(_, let anchor) = $0 { anchor } else { nil } }
        let id = nextBatchID
        nextBatchID += 1
        if !batch.frames.isEmpty { connection!.awaiting[id] = batch.frames }
        for key in batch.events { inFlightEvents[key] = id }
        if !batch.events.isEmpty { batchEvents[id] = batch.events }
        if !anchors.isEmpty { batchAnchors[id] = anchors }
        actions.append(.persist(PersistBatch(id: id, items: batch.items)))
    }

    private mutating func handleNack(_ nack: Nack, at now: LinkInstant) {
        actions.append(.report(.nackReceived(nack)))
        if let request = connection!.request, request.sequence == nack.sequence {
            switch (request.message, nack.reason) {
            case (.hello, .unsupportedVersion):
                let device = nack.detail.count >= 2 && nack.detail[0] <= nack.detail[1] ? nack.detail[0]...nack.detail[1] : 0...0
                closeForIncompatibility(device: device)
            case (_, .badCRC), (_, .truncated):
                retryRequest(at: now)  // §8.5: our frame was damaged in transit; resend at once
            case (_, .busy), (_, .outOfWindow), (_, .storageFull):
                break  // the request timer resends it
            case (_, .unknownType), (_, .malformed), (_, .invalidValue), (_, .unsupportedVersion):
                finishRequest()  // §8.5: the device will never accept this request; do not repeat it
                sendNextRequest(at: now)
            }
        } else if let outstanding = connection!.timeSync.outstanding, outstanding.sequence == nack.sequence {
            connection!.timeSync.outstanding = nil
            connection!.timeSync.remaining -= 1
            actions.append(.armTimer(.timeSync, at: now.advanced(by: configuration.timeSyncSpacing)))
        }
    }

    // MARK: - Requests (§8.7)

    private mutating func enqueueRequest(_ message: LinkMessage, at now: LinkInstant) {
        connection!.queuedRequests.append(message)
        if connection!.request == nil { sendNextRequest(at: now) }
    }

    private mutating func sendNextRequest(at now: LinkInstant) {
        guard connection != nil, connection!.request == nil, !connection!.queuedRequests.isEmpty else { return }
        startRequest(connection!.queuedRequests.removeFirst(), at: now)
    }

    private mutating func startRequest(_ message: LinkMessage, at now: LinkInstant) {
        let sequence = connection!.allocateSequence()
        connection!.request = OutstandingRequest(
            message: message, sequence: sequence, attempts: 1, acceptedAtSend: connection!.window.accepted)
        send(message, sequence: sequence)
        if case .setConfig(let config) = message {
            actions.append(.report(.settings(.setConfigSent(config, sequence: sequence, attempt: 1))))
        }
        actions.append(.armTimer(.request, at: now.advanced(by: configuration.requestTimeout)))
    }

    private mutating func retryRequest(at now: LinkInstant) {
        guard var request = connection!.request else { return }
        // §8.7: a busy device is not an unresponsive one. The answer is a reliable frame and queues behind the
        // device's full window (§8.6), which moves only as the gateway stores and ACKs what fills it. So an
        // attempt during which the device's stream moved, or while its window held frames only the gateway can
        // release (a store in progress, a refused store the device will resend), is repeated but not counted.
        // Retransmissions and busy-NACKed frames do not count as progress: they show the device is alive, not
        // that the answer can ever come, and must not hold a link open forever.
        let busy = connection!.window.accepted != request.acceptedAtSend || connection!.window.waitsOnGateway
        if !busy {
            guard request.attempts < configuration.requestAttempts else {
                closeConnection()
                actions.append(.disconnect(.unresponsive(request.message.type)))
                phase = .closing
                return
            }
            request.attempts += 1
        }
        request.acceptedAtSend = connection!.window.accepted
        connection!.request = request
        send(request.message, sequence: request.sequence, flags: .retransmit)
        if case .setConfig(let config) = request.message {
            actions.append(.report(.settings(.setConfigSent(config, sequence: request.sequence, attempt: request.attempts))))
        }
        actions.append(.armTimer(.request, at: now.advanced(by: configuration.requestTimeout)))
    }

    private mutating func finishRequest() {
        guard connection!.request != nil else { return }
        connection!.request = nil
        actions.append(.cancelTimer(.request))
    }

    private mutating func completeConfigRequest(at now: LinkInstant) {
        if let request = connection!.request {
            switch request.message {
            case .getConfig, .setConfig:
                finishRequest()
            default:
                break
            }
        }
        applyDesiredConfigIfNeeded(at: now)
        sendNextRequest(at: now)
    }

    /// Sends SET_CONFIG when the device reports another version than the desired one (§7.11).
    private mutating func applyDesiredConfigIfNeeded(at now: LinkInstant) {
        guard let desired = desiredConfig, let reported = reportedConfig, reported.version != desired.version else { return }
        let alreadyAsked = connection!.queuedRequests.contains(.setConfig(desired)) || connection!.request?.message == .setConfig(desired)
        guard !alreadyAsked else { return }
        enqueueRequest(.setConfig(desired), at: now)
    }

    // MARK: - Time sync (§9)

    private mutating func startTimeSyncBurst(at now: LinkInstant) {
        anchorFastestSample()  // §9.3: a burst cut short by a reboot still anchors the boot it measured
        connection!.timeSync = TimeSyncState(remaining: configuration.timeSyncBurst)
        sendTimeSyncRequest(at: now)
    }

    private mutating func sendTimeSyncRequest(at now: LinkInstant) {
        let sequence = connection!.allocateSequence()
        connection!.timeSync.outstanding = (sequence, now)
        send(.timeSyncRequest, sequence: sequence)
        actions.append(.armTimer(.timeSync, at: now.advanced(by: configuration.timeSyncTimeout)))
    }

    /// The time-sync timer: a timeout if a request is outstanding, else the next step of the burst or the next burst.
    private mutating func advanceTimeSync(at now: LinkInstant) {
        guard case .established = phase else { return }
        if let outstanding = connection!.timeSync.outstanding {
            actions.append(.report(.timeSyncLost(request: outstanding.sequence)))
            connection!.timeSync.outstanding = nil
            connection!.timeSync.remaining -= 1
        }
        if connection!.timeSync.remaining > 0 {
            sendTimeSyncRequest(at: now)
        } else if connection!.timeSync.inBurst {
            finishTimeSyncBurst(at: now)
        } else {
            startTimeSyncBurst(at: now)
        }
    }

    private mutating func acceptTimeSyncResponse(_ response: TimeSyncResponse, at now: LinkInstant) {
        guard let outstanding = connection!.timeSync.outstanding, outstanding.sequence == response.requestSequence else {
            return  // an answer to a request we gave up on: its delay is unknown (§8.7)
        }
        noteBoot(response.bootCounter, serial: serial)
        connection!.timeSync.outstanding = nil
        connection!.timeSync.remaining -= 1
        let sample = TimeSyncSample(
            bootCounter: response.bootCounter, requestSentAt: outstanding.sentAt, responseReceivedAt: now,
            deviceReceiveTicks: history.widenTicks(response.receiveTicks, boot: response.bootCounter),
            deviceTransmitTicks: history.widenTicks(response.transmitTicks, boot: response.bootCounter))
        // §9.6: anchors never cross boots. A burst that straddles a reboot is cut short for the old boot: its
        // fastest sample so far anchors that boot (§9.3), and the rest of the burst measures the new one.
        if let first = connection!.timeSync.samples.first, first.bootCounter != sample.bootCounter {
            anchorFastestSample()
        }
        connection!.timeSync.samples.append(sample)
        if connection!.timeSync.remaining > 0 {
            actions.append(.armTimer(.timeSync, at: now.advanced(by: configuration.timeSyncSpacing)))
        } else {
            finishTimeSyncBurst(at: now)
        }
    }

    private mutating func finishTimeSyncBurst(at now: LinkInstant) {
        let anchored = anchorFastestSample()
        connection!.timeSync = TimeSyncState(remaining: 0, inBurst: false)
        // §9.1: a burst that produced nothing is tried again soon, not after the full interval: events of this
        // boot have no time until it succeeds.
        let next = anchored ? configuration.timeSyncInterval : configuration.timeSyncRetry
        actions.append(.armTimer(.timeSync, at: now.advanced(by: next)))
    }

    /// §9.3: the fastest sample gathered so far becomes the anchor, and the samples are used up. Called when a
    /// burst completes and when one is cut short (the link drops, the device reboots, a new burst starts): the
    /// samples of a cut-short burst are as good as those of a whole one, and a boot that ends inside its first
    /// burst would otherwise never get an anchor, leaving its events without a wall-clock time (§9.7).
    @discardableResult
    private mutating func anchorFastestSample() -> Bool {
        let samples = connection!.timeSync.samples
        connection!.timeSync.samples.removeAll()
        guard let anchor = TimeSyncSample.bestAnchor(of: samples) else { return false }
        clock.add(anchor)
        actions.append(.report(.anchorAdded(anchor, samples: samples.count)))
        var batch = BatchBuilder()
        batch.add(.anchor(serial: serial, anchor), frame: nil)
        submit(batch)
        return true
    }

    // MARK: - Output

    private mutating func send(_ message: LinkMessage, sequence: SequenceNumber, flags: FrameFlags = []) {
        let version: UInt8
        switch (phase, message) {
        case (_, .hello), (.idle, _), (.hello, _), (.closing, _):
            version = ProtocolVersion.helloHeaderVersion  // §6.2
        case (.established(let negotiated), _):
            version = negotiated
        }
        message.append(version: version, sequence: sequence, flags: flags, to: &connection!.outgoing)
    }

    private mutating func sendAck() {
        let ack = connection!.window.ack
        send(.ack(ack), sequence: connection!.allocateSequence())
        actions.append(.report(.acknowledged(ack)))
    }

    private mutating func sendNack(_ nack: Nack) {
        send(.nack(nack), sequence: connection!.allocateSequence())
    }

    /// §3.1: the frames of this step leave as few ATT values as the MTU allows.
    private mutating func flushWrites() {
        guard connection != nil, !connection!.outgoing.isEmpty else { return }
        for segment in FrameEncoder.segments(of: connection!.outgoing, valueSize: connection!.valueSize) {
            actions.append(.write(segment))
        }
        connection!.outgoing.removeAll(keepingCapacity: true)
    }

    private mutating func closeConnection() {
        flushWrites()
        if connection != nil { anchorFastestSample() }  // §9.3: a burst cut short by the link's end
        if let connection {
            if connection.request != nil { actions.append(.cancelTimer(.request)) }
            if connection.stallArmed { actions.append(.cancelTimer(.stall)) }
            actions.append(.cancelTimer(.timeSync))
        }
        connection = nil
    }

    private mutating func drainActions() -> [LinkAction] {
        flushWrites()
        defer { actions.removeAll(keepingCapacity: true) }
        return actions
    }
}

// MARK: - Per-connection state

extension LinkSession {
    struct Connection: Sendable {
        var valueSize: Int
        var decoder = FrameDecoder()
        var nextSequence = SequenceNumber(0)
        var window: ReceiveWindow
        /// Frames of this link whose acknowledgement waits for a batch.
        var awaiting: [PersistBatch.ID: [SequenceNumber]] = [:]
        var request: OutstandingRequest?
        var queuedRequests: [LinkMessage] = []
        var timeSync = TimeSyncState(remaining: 0, inBurst: false)
        var outgoing: [UInt8] = []
        var stallArmed = false

        init(valueSize: Int, windowSize: Int) {
            self.valueSize = valueSize
            self.window = ReceiveWindow(size: windowSize)
        }

        /// §5.1: every gateway frame takes the next number.
        mutating func allocateSequence() -> SequenceNumber {
            defer { nextSequence = nextSequence.next }
            return nextSequence
        }
    }

    struct OutstandingRequest: Sendable {
        var message: LinkMessage
        var sequence: SequenceNumber
        /// Attempts that counted toward the limit (§8.7): sent while the device was not busy.
        var attempts: Int
        /// `ReceiveWindow.accepted` when the request was last sent: a change shows the device's stream moved.
        var acceptedAtSend: UInt64
    }

    struct TimeSyncState: Sendable {
        var remaining: Int
        var inBurst = true
        var outstanding: (sequence: SequenceNumber, sentAt: LinkInstant)?
        var samples: [TimeSyncSample] = []
    }

    struct BatchBuilder {
        var items: [PersistItem] = []
        var frames: [SequenceNumber] = []
        var events: [EventKey] = []

        var isEmpty: Bool { items.isEmpty && frames.isEmpty }

        mutating func add(_ item: PersistItem, frame: SequenceNumber?, event: EventKey? = nil) {
            items.append(item)
            if let frame { frames.append(frame) }
            if let event { events.append(event) }
        }
    }
}

/// Tunables of the session; the defaults are the protocol's (§ cited on each).
public struct LinkSessionConfiguration: Hashable, Sendable {
    public var versions: ClosedRange<UInt8> = ProtocolVersion.supported
    /// §7.1, §8.6.
    public var window: UInt8 = 16
    /// §8.7: the retry interval, and the attempts (sent while the device was not busy) before giving up.
    public var requestTimeout: Duration = .milliseconds(1500)
    public var requestAttempts = 3
    /// §3.4.
    public var stallTimeout: Duration = .milliseconds(500)
    /// §9.1.
    public var timeSyncBurst = 5
    public var timeSyncSpacing: Duration = .milliseconds(100)
    public var timeSyncTimeout: Duration = .milliseconds(1500)
    public var timeSyncInterval: Duration = .seconds(600)
    /// §9.1: after a burst with no usable sample.
    public var timeSyncRetry: Duration = .seconds(10)

    public init() {}
}
