import BlueZ
import HealthProfiles
import TetherPrimitives

/// The cold lane's I/O on one connection of one records-bearing service: it feeds a `RecordTransfer` the facts
/// (record values, RACP indications, its timer, the link going down) one at a time from one inbox, and carries out
/// its orders in order: WriteValue on the control point, a store through the `HealthRecordSink` awaited before the
/// next order (RecordTransfer rule 2 holds them back until then), a timer on the gateway's clock, the deletion
/// rule's facts read from the sink (rule 7). Nothing here decides anything.
///
/// One inbox and one loop make the facts a sequence: a record that arrives while a store is being written waits
/// for it, as the sans-I/O core expects. After the link-down fact the loop feeds the core nothing more (a store in
/// flight then still completes: it is durable state, and the cursor in it is right) and only answers backfills
/// queued behind the fact, until the session finishes the inbox; so every backfill is answered exactly once.
struct RecordTransferDriver: Sendable {
    enum Event: Sendable {
        /// A value of the records' characteristic or of a companion (Glucose Measurement Context).
        case value(HealthCharacteristicValue)
        /// The control point indicated these bytes.
        case indication([UInt8])
        case timer
        /// The held indications have waited `settle`.
        case settled
        case linkDown
        /// A technician asked for the stored records now (RecordTransfer rule 6); `reply` is called exactly once,
        /// when the procedure ends (or at once when this connection can run none).
        case backfill(@Sendable (HealthBackfillResult) -> Void)
        /// The gateway wrote the device's clock (`TimeWriteMoment`): records stored from now on are timed with
        /// these facts. Queued behind every value that arrived before the write, so those keep the old ones.
        case clockChanged(DeviceClockFacts)
    }

    /// How long a control-point indication waits before the core hears of it, so that the records the device sent
    /// before it (on the air, in order) are fed first. They reach the gateway on other streams than the indication
    /// (an AcquireNotify socket or another D-Bus signal stream, each read by its own task), so the order between
    /// them is lost here; a record fed after its request's response is taken again by a later request (keys make
    /// that safe), but a probe answered before its record arrives would conclude the device holds nothing.
    static let settle: Duration = .milliseconds(200)

    private(set) var context: HealthRecordStreamContext
    let controlPoint: GattCharacteristic
    let writeTimeout: Duration
    let records: any HealthRecordSink
    /// Where values that are no record go (bytes a parser refuses are counted there, as for any value).
    let values: any HealthValueSink
    let clock: GatewayClock
    let events: AsyncStream<Event>.Continuation
    /// Told how each procedure ended, after the sink (the session's time-write gate waits on it). Not told of
    /// deletions: they take no record and change no stamp.
    let ended: @Sendable (RecordProcedureEnding) -> Void
    /// Told how each deletion went, or why none was made (tetherd logs it; RecordTransfer rule 7).
    let deletionReported: @Sendable (HealthRecordDeletion) -> Void
    /// Told how the look for vanished records went (tetherd logs it; RecordTransfer rule 8).
    let auditReported: @Sendable (HealthRecordAudit) -> Void
    var transfer: RecordTransfer<HealthCharacteristicValue>
    private var timer: Task<Void, Never>?
    private var held: [[UInt8]] = []
    private var settling: Task<Void, Never>?
    /// Records stored with a cursor move on this connection, and the backfills waiting for the procedure's end with
    /// the count when each asked.
    private var recordsStored = 0
    private var backfills: [(reply: @Sendable (HealthBackfillResult) -> Void, baseline: Int)] = []
    private var linkEnded = false

    init(
        context: HealthRecordStreamContext, controlPoint: GattCharacteristic, writeTimeout: Duration,
        configuration: RecordAccessConfiguration, cursor: RecordCursor, records: any HealthRecordSink,
        values: any HealthValueSink, clock: GatewayClock, events: AsyncStream<Event>.Continuation,
        deletesAcknowledgedRecords: Bool = false, auditsVanishedRecords: Bool = false,
        ended: @escaping @Sendable (RecordProcedureEnding) -> Void = { _ in },
        deletionReported: @escaping @Sendable (HealthRecordDeletion) -> Void = { _ in },
        auditReported: @escaping @Sendable (HealthRecordAudit) -> Void = { _ in }
    ) {
        self.ended = ended
        self.deletionReported = deletionReported
        self.auditReported = auditReported
        self.context = context
        self.controlPoint = controlPoint
        self.writeTimeout = writeTimeout
        self.records = records
        self.values = values
        self.clock = clock
        self.events = events
        transfer = RecordTransfer(
            configuration: configuration, cursor: cursor, deletesAcknowledgedRecords: deletesAcknowledgedRecords,
            auditsVanishedRecords: auditsVanishedRecords)
    }

    /// Runs the procedure (and its catch-ups) until the link goes down.
    mutating func run(_ inbox: AsyncStream<Event>) async {
        await execute(transfer.start(now: clock.linkNow()))
        for await event in inbox {
            let now = clock.linkNow()
            // After the link went down only a backfill still needs an answer (it was queued behind the fact).
            guard !linkEnded else {
                if case .backfill(let reply) = event { reply(ending("link-down", "the link to the device ended")) }
                continue
            }
            switch event {
            case .value(let value):
                guard let characteristic = HealthCharacteristic(rawValue: value.characteristic),
                    let decoded = try? HealthDecoder.decode(characteristic: characteristic, bytes: value.bytes),
                    let arrival = RecordArrival(decoded)
                else {
                    await values.received(value)
                    continue
                }
                await execute(transfer.received(value, as: arrival, at: now))
            case .indication(let bytes):
                held.append(bytes)
                if settling == nil {
                    let (clock, events) = (clock, events)
                    settling = Task {
                        do { try await clock.sleep(Self.settle) } catch { return }
                        events.yield(.settled)
                    }
                }
            case .settled:
                settling = nil
                let indications = held
                held = []
                for bytes in indications {
                    await execute(transfer.indicationReceived(bytes: bytes, at: clock.linkNow()))
                }
            case .timer:
                await execute(transfer.timerFired(at: now))
            case .clockChanged(let facts):
                context.clock = facts
            case .backfill(let reply):
                let orders = transfer.backfillRequested(now: now)
                guard transfer.isRunning || !orders.isEmpty else {
                    reply(ending("abandoned", "a store failed on this connection; the next connection resumes from the cursor"))
                    continue
                }
                backfills.append((reply, recordsStored))
                await execute(orders)
            case .linkDown:
                await execute(transfer.disconnected(at: now))
                timer?.cancel()
                settling?.cancel()
                answerBackfills { $0.ending("link-down", "the link to the device ended") }
                linkEnded = true
            }
        }
        timer?.cancel()
        settling?.cancel()
        answerBackfills { $0.ending("link-down", "the link to the device ended") }
    }

    private func ending(_ outcome: String, _ reason: String, stored: Int = 0) -> HealthBackfillResult {
        HealthBackfillResult(
            service: context.service.controlName, outcome: outcome, reason: reason, recordsStored: stored,
            cursorEpoch: transfer.durableCursor.epoch, cursorLast: transfer.durableCursor.last)
    }

    private mutating func answerBackfills(_ result: (Self, Int) -> HealthBackfillResult) {
        let waiting = backfills
        backfills = []
        for waiter in waiting { waiter.reply(result(self, recordsStored - waiter.baseline)) }
    }

    private mutating func answerBackfills(_ result: (Self) -> HealthBackfillResult) {
        answerBackfills { driver, _ in result(driver) }
    }

    /// RecordTransfer rule 8's end: the samples of vanished records tombstoned, and the report for the log.
    private func auditEnded(_ end: RecordAuditEnd, epoch: UInt32) async {
        let (address, service) = (context.address, context.service.controlName)
        let report: HealthRecordAudit
        switch end {
        case .finding(.vanished(let keys)) where keys.isEmpty:
            report = HealthRecordAudit(address: address, service: service, outcome: .intact, epoch: epoch)
        case .finding(.vanished(let keys)):
            if let tombstones = await records.recordsVanished(keys, epoch: epoch, of: context) {
                report = HealthRecordAudit(
                    address: address, service: service, outcome: tombstones > 0 ? .vanished : .nothingToDelete, epoch: epoch, keys: keys,
                    tombstones: tombstones)
            } else {
                report = HealthRecordAudit(
                    address: address, service: service, outcome: .inconclusive, epoch: epoch, keys: keys, reason: "storing the tombstones failed")
            }
        case .finding(let other):
            report = HealthRecordAudit(address: address, service: service, outcome: .inconclusive, epoch: epoch, reason: "\(other)")
        case .stopped(let outcome):
            report = HealthRecordAudit(address: address, service: service, outcome: .inconclusive, epoch: epoch, reason: "\(outcome)")
        case .refusedByClient(let refusal):
            report = HealthRecordAudit(address: address, service: service, outcome: .inconclusive, epoch: epoch, reason: "\(refusal)")
        case .keysUnreadable:
            report = HealthRecordAudit(address: address, service: service, outcome: .inconclusive, epoch: epoch, reason: "the store's keys could not be read")
        case .notApplicable:
            report = HealthRecordAudit(
                address: address, service: service, outcome: .skipped, epoch: epoch, reason: "nothing committed, a fenced epoch, or time-offset keys")
        }
        auditReported(report)
    }

    private mutating func execute(_ orders: [RecordTransfer<HealthCharacteristicValue>.Order]) async {
        var queue = orders[...]
        while let order = queue.popFirst() {
            switch order {
            case .write(let bytes):
                do {
                    try await controlPoint.writeValue(bytes, type: .request, timeout: writeTimeout)
                } catch let error as BlueZError where error.attErrorCode != nil {
                    queue += transfer.writeFailed(attError: error.attErrorCode ?? 0, at: clock.linkNow())
                } catch {
                    // Not the device's answer (the link dropping, a local time-out): the client's response
                    // time-out or the link-down fact ends the request.
                }
            case .store(let batch):
                let durable = await records.store(batch, of: context)
                if durable, batch.cursor != nil { recordsStored += batch.records.count }
                queue += transfer.storeCompleted(durable: durable, at: clock.linkNow())
            case .armTimer(let at):
                timer?.cancel()
                let (clock, events) = (clock, events)
                timer = Task {
                    let delay = clock.linkNow().duration(to: at)
                    do { try await clock.sleep(max(delay, .zero)) } catch { return }
                    events.yield(.timer)
                }
            case .cancelTimer:
                timer?.cancel()
                timer = nil
            case .finished(let outcome):
                await records.procedureEnded(.finished(outcome), of: context)
                ended(.finished(outcome))
                let service = context.service
                answerBackfills { _, stored in HealthBackfillResult(service: service, outcome: outcome, recordsStored: stored) }
            case .abandoned(let cursor):
                await records.procedureEnded(.abandoned(cursor: cursor), of: context)
                ended(.abandoned(cursor: cursor))
                answerBackfills { $0.ending("abandoned", "storing the records failed; the next connection resumes from the cursor") }
            case .readAcknowledgements(let epoch, let through):
                let facts = await records.acknowledgements(of: context, epoch: epoch, through: through)
                queue += transfer.acknowledgementsRead(facts, at: clock.linkNow())
            case .deletionFinished(let outcome, let asked):
                // Reported to the sink (which remembers how far, so that a later connection does not delete again)
                // and logged; never to the time-write gate or a backfill, which wait for transfers.
                await records.procedureEnded(.finished(outcome), of: context)
                deletionReported(HealthRecordDeletion(address: context.address, service: context.service, finished: outcome, asked: asked))
            case .deletionDeclined(let why):
                deletionReported(HealthRecordDeletion(
                    address: context.address, service: context.service, declined: why, epoch: transfer.durableCursor.epoch))
            case .readRecordKeys(let epoch, let through):
                let keys = await records.expectedRecordKeys(of: context, epoch: epoch, through: through)
                queue += transfer.recordKeysRead(keys, at: clock.linkNow())
            case .auditFinished(let epoch, let end):
                await auditEnded(end, epoch: epoch)
            case .compareLatestRecord(let epoch, let key, let value):
                let same = await records.isStoredRecord(value, key: key, epoch: epoch, of: context)
                queue += transfer.latestCompared(same, at: clock.linkNow())
            case .noted:
                break
            }
        }
    }
}
