import TetherPrimitives
// Time sync (§9): bursts of TIME_SYNC_REQUEST, the fastest sample of a burst as the boot's anchor.

extension LinkSession {
    mutating func startTimeSyncBurst(_ connection: inout Connection, at now: Timestamp) {
        anchorFastestSample(&connection)  // §9.3: a burst cut short by a reboot still anchors the boot it measured
        connection.timeSync = TimeSyncState(remaining: configuration.timeSyncBurst)
        sendTimeSyncRequest(&connection, at: now)
    }

    private mutating func sendTimeSyncRequest(_ connection: inout Connection, at now: Timestamp) {
        let sequence = connection.allocateSequence()
        connection.timeSync.outstanding = (sequence, now)
        send(.timeSyncRequest, sequence: sequence, &connection)
        actions.append(.armTimer(.timeSync, at: now.advanced(by: configuration.timeSyncTimeout)))
    }

    /// The time-sync timer: a timeout if a request is outstanding, else the next step of the burst or the next burst.
    mutating func advanceTimeSync(_ connection: inout Connection, at now: Timestamp) {
        guard case .established = connection.handshake else { return }
        if let outstanding = connection.timeSync.outstanding {
            actions.append(.report(.timeSyncLost(request: outstanding.sequence)))
            connection.timeSync.outstanding = nil
            connection.timeSync.remaining -= 1
        }
        if connection.timeSync.remaining > 0 {
            sendTimeSyncRequest(&connection, at: now)
        } else if connection.timeSync.inBurst {
            finishTimeSyncBurst(&connection, at: now)
        } else {
            startTimeSyncBurst(&connection, at: now)
        }
    }

    mutating func acceptTimeSyncResponse(_ response: TimeSyncResponse, _ connection: inout Connection, at now: Timestamp) {
        guard let outstanding = connection.timeSync.outstanding, outstanding.sequence == response.requestSequence else {
            return  // an answer to a request we gave up on: its delay is unknown (§8.7)
        }
        noteBoot(response.bootCounter, serial: serial)
        connection.timeSync.outstanding = nil
        connection.timeSync.remaining -= 1
        let sample = TimeSyncSample(
            bootCounter: response.bootCounter, requestSentAt: outstanding.sentAt, responseReceivedAt: now,
            deviceReceiveTicks: history.widenTicks(response.receiveTicks, boot: response.bootCounter),
            deviceTransmitTicks: history.widenTicks(response.transmitTicks, boot: response.bootCounter))
        // §9.6: anchors never cross boots. A burst that straddles a reboot is cut short for the old boot: its
        // fastest sample so far anchors that boot (§9.3), and the rest of the burst measures the new one.
        if let first = connection.timeSync.samples.first, first.bootCounter != sample.bootCounter {
            anchorFastestSample(&connection)
        }
        connection.timeSync.samples.append(sample)
        if connection.timeSync.remaining > 0 {
            actions.append(.armTimer(.timeSync, at: now.advanced(by: configuration.timeSyncSpacing)))
        } else {
            finishTimeSyncBurst(&connection, at: now)
        }
    }

    /// A NACK of the outstanding TIME_SYNC_REQUEST makes it a lost sample; the burst goes on after the spacing.
    mutating func timeSyncRequestRefused(_ nack: Nack, _ connection: inout Connection, at now: Timestamp) {
        guard let outstanding = connection.timeSync.outstanding, outstanding.sequence == nack.sequence else { return }
        connection.timeSync.outstanding = nil
        connection.timeSync.remaining -= 1
        actions.append(.armTimer(.timeSync, at: now.advanced(by: configuration.timeSyncSpacing)))
    }

    private mutating func finishTimeSyncBurst(_ connection: inout Connection, at now: Timestamp) {
        let anchored = anchorFastestSample(&connection)
        connection.timeSync = TimeSyncState(remaining: 0, inBurst: false)
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
    mutating func anchorFastestSample(_ connection: inout Connection) -> Bool {
        let samples = connection.timeSync.samples
        connection.timeSync.samples.removeAll()
        guard let anchor = TimeSyncSample.bestAnchor(of: samples) else { return false }
        clock.add(anchor)
        actions.append(.report(.anchorAdded(anchor, samples: samples.count)))
        var batch = BatchBuilder()
        batch.add(.anchor(serial: serial, anchor), frame: nil)
        submit(batch, &connection)
        return true
    }

    struct TimeSyncState: Sendable {
        var remaining: Int
        var inBurst = true
        var outstanding: (sequence: SequenceNumber, sentAt: Timestamp)?
        var samples: [TimeSyncSample] = []
    }
}
