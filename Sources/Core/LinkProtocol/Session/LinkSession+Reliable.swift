import TetherPrimitives
// Reliable delivery (§8): frames into batches to store, ACKs once a batch is durable (§8.2), NACKs, and the
// bookkeeping of batches that outlives a connection (§8.8, §8.10).

extension LinkSession {
    // MARK: - Events and other stored frames

    mutating func acceptHit(_ hit: HitEvent, version: UInt8, sequence: SequenceNumber, _ connection: inout Connection, at now: Timestamp, batch: inout BatchBuilder, ackDue: inout Bool) {
        if noteBoot(hit.bootCounter, serial: serial) {
            startTimeSyncBurst(&connection, at: now)  // §9.1: a reboot we learn of from an event needs new anchors
        }
        let widened = history.widenSequence(hit.eventSequence, bits: HitEvent.sequenceBits(version: version), boot: hit.bootCounter)
        let key = EventKey(serial: serial, bootCounter: hit.bootCounter, sequence: widened)
        if history.isStored(key) {
            actions.append(.report(.duplicate(key)))
            connection.window.markHandled(sequence)
            ackDue = true
            return
        }
        if let batchID = inFlightEvents[key] {
            // §8.8: the same event in another frame (or on a new link) while its store is in progress: this frame
            // is ACKed when that store completes.
            connection.awaiting[batchID, default: []].append(sequence)
            connection.window.markInProgress(sequence)
            actions.append(.report(.duplicate(key)))
            return
        }
        if batch.events.contains(key) {
            batch.frames.append(sequence)
            connection.window.markInProgress(sequence)
            actions.append(.report(.duplicate(key)))
            return
        }
        let ticks = history.widenTicks(hit.ticks, boot: hit.bootCounter)
        let stored = StoredHit(
            key: key, ticks: ticks, durationMilliseconds: hit.durationMilliseconds, intensity: hit.intensity,
            receivedAt: now, time: clock.estimate(boot: hit.bootCounter, ticks: ticks))
        batch.add(.hit(stored), frame: sequence, event: key)
        connection.window.markInProgress(sequence)
    }

    mutating func accept(_ item: PersistItem, sequence: SequenceNumber, _ connection: inout Connection, batch: inout BatchBuilder) {
        batch.add(item, frame: sequence)
        connection.window.markInProgress(sequence)
    }

    // MARK: - Batches

    mutating func submit(_ batch: BatchBuilder, _ connection: inout Connection) {
        var batch = batch
        for anchor in unsavedAnchors { batch.add(.anchor(serial: serial, anchor), frame: nil) }
        unsavedAnchors.removeAll()
        let anchors = batch.items.compactMap { if case .anchor(_, let anchor) = $0 { anchor } else { nil } }
        let id = nextBatchID
        nextBatchID += 1
        if !batch.frames.isEmpty { connection.awaiting[id] = batch.frames }
        for key in batch.events { inFlightEvents[key] = id }
        if !batch.events.isEmpty { batchEvents[id] = batch.events }
        if !anchors.isEmpty { batchAnchors[id] = anchors }
        actions.append(.persist(PersistBatch(id: id, items: batch.items)))
    }

    /// A batch is durable: its events are stored, whichever link carried them.
    mutating func batchStored(_ batch: PersistBatch.ID) {
        for key in batchEvents.removeValue(forKey: batch) ?? [] {
            history.markStored(key)
            inFlightEvents.removeValue(forKey: key)
        }
        batchAnchors.removeValue(forKey: batch)
    }

    /// A batch was refused: its events may be offered again, and its anchors ride along with the next batch.
    mutating func batchRefused(_ batch: PersistBatch.ID) {
        for key in batchEvents.removeValue(forKey: batch) ?? [] { inFlightEvents.removeValue(forKey: key) }
        unsavedAnchors += batchAnchors.removeValue(forKey: batch) ?? []
    }

    /// This link's frames that waited for a durable batch are handled, and ACKed (§8.2).
    mutating func acknowledgeStored(_ batch: PersistBatch.ID, _ connection: inout Connection) {
        // None waits when the batch came from an earlier link: the device will retransmit and be re-ACKed.
        guard let frames = connection.awaiting.removeValue(forKey: batch) else { return }
        for frame in frames { connection.window.markHandled(frame) }
        if !frames.isEmpty { sendAck(&connection) }
    }

    /// This link's frames in a refused batch go back to the device (§8.10).
    mutating func refuseStored(_ batch: PersistBatch.ID, reason: StorageFailure, _ connection: inout Connection) {
        guard let frames = connection.awaiting.removeValue(forKey: batch) else { return }
        for frame in frames { connection.window.abandon(frame) }
        switch reason {
        case .storageFull:
            for frame in frames { sendNack(Nack(sequence: frame, reason: .storageFull), &connection) }
            actions.append(.report(.storageRefused(frames: frames.count)))
        }
    }

    // MARK: - ACK and NACK

    mutating func sendAck(_ connection: inout Connection) {
        let ack = connection.window.ack
        let sequence = connection.allocateSequence()
        send(.ack(ack), sequence: sequence, &connection)
        actions.append(.report(.acknowledged(ack)))
    }

    mutating func sendNack(_ nack: Nack, _ connection: inout Connection) {
        let sequence = connection.allocateSequence()
        send(.nack(nack), sequence: sequence, &connection)
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
