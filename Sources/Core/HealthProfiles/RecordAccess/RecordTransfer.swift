import TetherPrimitives

/// The cold lane on one connection, sans I/O: a `RecordAccessClient` plus the values its records arrived in, so
/// that the driver stores exactly the records the client commits, with their companions, and nothing before the
/// store has them. Generic over `Value` (the gateway's received characteristic value); it never looks inside one.
/// Everything that decides what the cold lane stores and when lives in this file and RecordAccessClient.swift.
///
/// Rules:
/// 1. While a request is in flight, a value carrying records is buffered under each of its keys (the first value
///    per key; a repeat is the client's `duplicateRecord`) and its keys go to the client. Every `.write` starts a
///    new request and empties that buffer: records the client did not commit are taken again later from the cursor.
/// 2. The client's `.commit` becomes one `.store` with the buffered values of exactly its keys and the cursor: the
///    driver writes them in ONE transaction. Every order after a `.store` (the next request, the end) is held back
///    until the driver reports `storeCompleted(durable: true)`: the device is asked for more, and the procedure is
///    called done, only from durable state. `durable: false` ends the procedure for this connection with nothing
///    more written; the store still holds the cursor before that batch, where the next connection resumes.
/// 3. Companions (a Glucose Measurement Context) are kept per key for the whole connection, not per request, one per
///    key (the first: a repeat is the same context sent again), and are stored with their record; one that arrives after its record was stored (a value that came round the other
///    subscription's way) is stored alone, beside the record's remembered value, with no cursor move. One for a
///    record never stored on this connection is dropped with the connection: the report that brings the record
///    again brings it again.
/// 4. A record that arrives while no procedure runs (a live reading, or one late from an answer already committed)
///    is not stored from here: after a complete procedure, a new one is started from the committed cursor
///    ("≥ cursor + 1"), which takes it in order, in the right epoch, exactly once. Never after an interrupted or
///    refused one (no loop against a device that refuses).
/// 5. A disconnect finishes at once (the client's rule 7); a pending store still completes. The client's
///    `.confirmLatest` (its rule 4: the device's latest key below the cursor) becomes `.compareLatestRecord` with
///    the value the device's latest record arrived in; the driver answers `latestCompared`.
/// 6. A technician's backfill (control API `Backfill`) starts a new procedure from the committed cursor after ANY
///    ending, interrupted and refused included: a person asked once, so it cannot loop. While a procedure runs (or
///    its store is in flight) it starts nothing: the running one is the backfill. Asked during a deletion (rule 7),
///    it starts one when the deletion ends.
/// 7. Deleting acknowledged records (issue 14, item 2), only when the device's policy allows it
///    (`deletesAcknowledgedRecords`): after a procedure that ended complete, between procedures (no store in
///    flight, no catch-up wanted first), the transfer orders `.readAcknowledgements` once; the driver answers
///    `acknowledgementsRead` with the store's facts, and `RecordDeletionRule` decides. A permit starts the client's
///    deletion (its rule 8: "Delete Stored Records", operator "≤", GSS §3.178.2); its ending is
///    `.deletionFinished`, not `.finished`: a deletion takes no record and moves no cursor, and rules 4 and 6 keep
///    going by the last transfer's ending. Records arriving during it are handled as in rule 4. A deletion the
///    device refuses (op code or operator not supported, an ATT error) is not asked again on this connection;
///    one deleted is remembered here (and by the driver's store, across connections) and not repeated.
/// 8. Looking for vanished records (issue 14, the change lane: "a record that disappeared from the device"), only
///    when the device's policy asks (`auditsVanishedRecords`): once per connection, after the first procedure that
///    ended complete and after rule 7's deletion, between procedures, the transfer orders `.readRecordKeys`; the
///    driver answers `recordKeysRead` with the store's keys of the epoch up to the cursor, and
///    `VanishedRecordSearch` asks its counts one at a time (the client's rule 9). The end is `.auditFinished`: a
///    finding (the keys that vanished, for the driver to tombstone their samples) or why there is none. Records
///    arriving during a count are handled as in rule 4, after the audit; a backfill asked during it starts after it.
///    Whatever its end, it is not repeated on the connection.
public struct RecordTransfer<Value: Sendable>: Sendable {
    /// One record to store: its key, the value it arrived in, and its companions.
    public struct RecordValues: Sendable {
        public var key: UInt16
        public var record: Value
        public var companions: [Value]
        /// The record itself is already stored (rule 3: these are late companions only).
        public var recordAlreadyStored: Bool
    }

    /// What to write in one transaction: these records' samples (and companions) and, unless nil, the cursor.
    public struct StoreBatch: Sendable {
        public var records: [RecordValues]
        /// The cursor to store with them; nil for late companions alone.
        public var cursor: RecordCursor?
        /// The epoch the records belong to (the cursor's, or for late companions their record's).
        public var epoch: UInt32
    }

    public enum Order: Sendable {
        case write([UInt8])
        case store(StoreBatch)
        case armTimer(at: Timestamp)
        case cancelTimer
        /// The procedure ended; a later record outside it may start another (rule 4).
        case finished(RecordAccessOutcome)
        /// The driver's store refused or failed a batch: nothing more on this connection (rule 2).
        case abandoned(cursor: RecordCursor)
        /// Rule 7: read the store's facts for the deletion rule (this epoch's keys up to `through`, the committed
        /// cursor) and answer `acknowledgementsRead(_:at:)`.
        case readAcknowledgements(epoch: UInt32, through: UInt16)
        /// Rule 7: the deletion of `asked` ended (`.deleted`, or why not); the cursor in it is unchanged.
        case deletionFinished(RecordAccessOutcome, asked: RecordDeletionPermit)
        /// Rule 7: no deletion after this procedure, and why.
        case deletionDeclined(RecordDeletionRule.Decline)
        /// Rule 8: read the store's record keys of `epoch` up to `through` and answer `recordKeysRead(_:at:)`.
        case readRecordKeys(epoch: UInt32, through: UInt16)
        /// Rule 8: the audit of this connection ended.
        case auditFinished(epoch: UInt32, RecordAuditEnd)
        /// Rule 5 (the client's rule 4): is `value`, the device's latest record, the record stored under `key` in
        /// `epoch`? Answer `latestCompared(_:at:)`.
        case compareLatestRecord(epoch: UInt32, key: UInt16, value: Value)
        case noted(RecordAccessNote)
    }

    public let configuration: RecordAccessConfiguration
    private var client: RecordAccessClient
    private var answer: [UInt16: Value] = [:]
    private var companions: [UInt16: Value] = [:]
    /// Records stored on this connection, for their late companions (rule 3).
    private var stored: [UInt16: Value] = [:]
    private var storedEpoch: UInt32
    private var storedCompanions: Set<UInt16> = []
    private var awaitingStore = false
    private var held: [Order] = []
    private var lastOutcome: RecordAccessOutcome?
    private var catchUpWanted = false
    private var abandoned = false
    /// The cursor the store holds, as far as this transfer knows: where it started, then each durable store's.
    public private(set) var durableCursor: RecordCursor
    private var pendingCursor: RecordCursor?
    private var linkUp = true
    /// Procedures started on this connection (the first and its catch-ups).
    public private(set) var procedures = 0
    /// Rule 7: the device's policy lets the gateway delete records the backend acknowledged.
    public let deletesAcknowledgedRecords: Bool
    private var deletion = DeletionPhase.idle
    private var acknowledgementsWanted = false
    private var backfillWanted = false
    /// The last deletion done on this connection.
    public private(set) var deleted: RecordDeletionPermit?
    /// Rule 8: the device's policy asks the gateway to look for records that vanished from it.
    public let auditsVanishedRecords: Bool
    private var audit = AuditPhase.idle

    enum AuditPhase: Hashable, Sendable {
        case idle
        case wanted
        case readingKeys
        case counting(VanishedRecordSearch)
        case done
    }

    enum DeletionPhase: Hashable, Sendable {
        case idle
        case readingAcknowledgements
        case deleting(RecordDeletionPermit)
        /// The device refused a deletion: not asked again on this connection.
        case refusedByDevice
    }

    public init(
        configuration: RecordAccessConfiguration, cursor: RecordCursor, deletesAcknowledgedRecords: Bool = false, auditsVanishedRecords: Bool = false
    ) {
        self.configuration = configuration
        self.deletesAcknowledgedRecords = deletesAcknowledgedRecords
        self.auditsVanishedRecords = auditsVanishedRecords
        client = RecordAccessClient(configuration: configuration, cursor: cursor)
        durableCursor = cursor
        storedEpoch = cursor.epoch
    }

    public var isRunning: Bool { client.isRunning || awaitingStore }

    /// A deletion (rule 7) is in flight.
    public var isDeleting: Bool {
        if case .deleting = deletion { true } else { false }
    }

    /// An audit (rule 8) is reading the store's keys or counting.
    public var isAuditing: Bool {
        switch audit {
        case .readingKeys, .counting: true
        case .idle, .wanted, .done: false
        }
    }

    // MARK: Facts

    public mutating func start(now: Timestamp) -> [Order] {
        guard procedures == 0, linkUp else { return [] }
        procedures = 1
        return absorb(client.start(now: now), now: now)
    }

    /// A technician asked for the device's stored records now (rule 6). Returns the new procedure's first orders,
    /// or none when one is already running (it answers the request) or the connection cannot run one (`isRunning`
    /// stays false: the link is down or a store failed).
    public mutating func backfillRequested(now: Timestamp) -> [Order] {
        guard procedures > 0, linkUp, !abandoned else { return [] }
        if isDeleting || isAuditing {
            backfillWanted = true  // rule 6: started when the deletion or the audit ends
            return []
        }
        guard !awaitingStore, !client.isRunning else { return [] }
        catchUpWanted = false
        return startProcedure(now: now)
    }

    /// The driver's answer to `.readAcknowledgements` (rule 7): the store's facts, or nil when it could not read
    /// them. Starts the deletion the rule permits, or says why none.
    public mutating func acknowledgementsRead(_ facts: RecordAcknowledgements?, at now: Timestamp) -> [Order] {
        guard deletion == .readingAcknowledgements else { return [] }
        deletion = .idle
        guard linkUp, !abandoned, !awaitingStore, !client.isRunning else { return [] }
        guard var facts else { return [.deletionDeclined(.acknowledgementsUnreadable)] + betweenProcedures(now: now) }
        if let deleted, deleted.epoch == facts.epoch {
            facts.deletedThrough = max(facts.deletedThrough ?? 0, deleted.acknowledgedThrough)
        }
        switch RecordDeletionRule.decide(facts, cursor: client.cursor) {
        case .declined(let why):
            return [.deletionDeclined(why)] + betweenProcedures(now: now)
        case .permit(let permit):
            let orders: [RecordAccessOrder]
            do throws(RecordDeletionRefusal) {
                orders = try client.deleteRecords(permit: permit, at: now)
            } catch {
                return [.deletionDeclined(.refusedByClient(error))] + betweenProcedures(now: now)
            }
            deletion = .deleting(permit)
            return absorb(orders, now: now)
        }
    }

    /// The driver's answer to `.readRecordKeys` (rule 8): the epoch's keys the store holds up to the cursor, or nil
    /// when it could not read them. Starts the search's first count, or ends the audit.
    public mutating func recordKeysRead(_ keys: [UInt16]?, at now: Timestamp) -> [Order] {
        guard audit == .readingKeys else { return [] }
        guard linkUp, !abandoned, !awaitingStore, !client.isRunning, let last = client.cursor.last else {
            audit = .done
            return []
        }
        guard let keys else {
            audit = .done
            return [.auditFinished(epoch: client.cursor.epoch, .keysUnreadable)] + betweenProcedures(now: now)
        }
        audit = .counting(VanishedRecordSearch(keys: keys.filter { $0 <= last }))
        return betweenProcedures(now: now)
    }

    /// The driver's answer to `.compareLatestRecord`: the same record, another, or nil when the store could not say.
    public mutating func latestCompared(_ sameRecord: Bool?, at now: Timestamp) -> [Order] {
        guard !abandoned else { return [] }
        return absorb(client.latestConfirmed(sameRecord, at: now), now: now)
    }

    /// A value arrived on a records-bearing characteristic (rules 1, 3, 4).
    public mutating func received(_ value: Value, as arrival: RecordArrival, at now: Timestamp) -> [Order] {
        guard linkUp, !abandoned else { return [] }
        switch arrival {
        case .companion(let key):
            if let record = stored[key] {
                guard !storedCompanions.contains(key) else { return [] }  // sent again: stored already
                storedCompanions.insert(key)
                let late = RecordValues(key: key, record: record, companions: [value], recordAlreadyStored: true)
                return emit(.store(StoreBatch(records: [late], cursor: nil, epoch: storedEpoch)))
            }
            // One companion per record (GLS §4.10.1: a measurement has at most one context): a repeat (the probe's
            // answer and then the transfer's, or a value delivered twice) is the same context.
            if companions[key] == nil { companions[key] = value }
            return []
        case .records(let keys):
            guard client.isRunning, !isDeleting, !isAuditing else {
                // Rule 4.
                var orders = keys.map { Order.noted(.recordOutsideProcedure($0)) }
                catchUpWanted = true
                orders += betweenProcedures(now: now)
                return orders
            }
            var orders: [Order] = []
            for key in keys {
                if answer[key] == nil { answer[key] = value }
                orders += absorb(client.recordReceived(sequence: key, at: now), now: now)
            }
            return orders
        }
    }

    public mutating func indicationReceived(bytes: [UInt8], at now: Timestamp) -> [Order] {
        guard !abandoned else { return [] }
        return absorb(client.indicationReceived(bytes: bytes, at: now), now: now)
    }

    public mutating func writeFailed(attError code: UInt8, at now: Timestamp) -> [Order] {
        guard !abandoned else { return [] }
        return absorb(client.writeFailed(attError: code, at: now), now: now)
    }

    public mutating func timerFired(at now: Timestamp) -> [Order] {
        guard !abandoned else { return [] }
        return absorb(client.timerFired(at: now), now: now)
    }

    public mutating func disconnected(at now: Timestamp) -> [Order] {
        linkUp = false
        guard !abandoned else { return [] }
        return absorb(client.disconnected(at: now), now: now)
    }

    /// The driver's answer to the last `.store` (rule 2).
    public mutating func storeCompleted(durable: Bool, at now: Timestamp) -> [Order] {
        guard awaitingStore else { return [] }
        awaitingStore = false
        guard durable else {
            abandoned = true
            held = []
            return [.cancelTimer, .abandoned(cursor: durableCursor)]
        }
        durableCursor = pendingCursor ?? durableCursor
        pendingCursor = nil
        let release = held
        held = []
        var orders: [Order] = []
        for (index, order) in release.enumerated() {
            orders.append(order)
            if case .store(let batch) = order {
                awaitingStore = true
                pendingCursor = batch.cursor
                held = Array(release[(index + 1)...])
                return orders
            }
        }
        return orders + betweenProcedures(now: now)
    }

    // MARK: Orders

    /// Rules 1 and 2: the client's orders, with commits turned into stores and everything after a store held.
    private mutating func absorb(_ orders: [RecordAccessOrder], now: Timestamp) -> [Order] {
        var out: [Order] = []
        for order in orders {
            let converted: Order
            switch order {
            case .write(let bytes):
                answer = [:]
                converted = .write(bytes)
            case .commit(let commit):
                if commit.cursor.epoch != storedEpoch {
                    // A new epoch: its keys name other records than the same numbers before (rule 3).
                    storedEpoch = commit.cursor.epoch
                    stored = [:]
                    storedCompanions = []
                    companions = [:]
                }
                var records: [RecordValues] = []
                for key in commit.keys {
                    guard let record = answer[key] else { continue }  // never: the client names keys it was given
                    let companion = companions.removeValue(forKey: key)
                    records.append(RecordValues(key: key, record: record, companions: companion.map { [$0] } ?? [], recordAlreadyStored: false))
                    stored[key] = record
                    if companion != nil { storedCompanions.insert(key) }
                }
                converted = .store(StoreBatch(records: records, cursor: commit.cursor, epoch: commit.cursor.epoch))
            case .armTimer(let at):
                converted = .armTimer(at: at)
            case .cancelTimer:
                converted = .cancelTimer
            case .finished(let outcome) where isDeleting:
                // Rule 7: the deletion's end, not a transfer's.
                guard case .deleting(let asked) = deletion else { continue }
                switch outcome {
                case .deleted(let through, let cursor):
                    deleted = RecordDeletionPermit(epoch: cursor.epoch, acknowledgedThrough: through)
                    deletion = .idle
                case .refused:
                    deletion = .refusedByDevice
                case .complete, .interrupted, .counted:
                    deletion = .idle
                }
                converted = .deletionFinished(outcome, asked: asked)
            case .finished(let outcome) where isAuditing:
                // Rule 8: a count's end. The next count starts between procedures (`continueAudit`).
                guard case .counting(var search) = audit else { continue }
                if case .counted(_, let count, _) = outcome {
                    search.counted(count)
                    audit = .counting(search)
                    continue
                }
                audit = .done
                converted = .auditFinished(epoch: client.cursor.epoch, .stopped(outcome))
            case .finished(let outcome):
                lastOutcome = outcome
                if case .complete = outcome, deletesAcknowledgedRecords { acknowledgementsWanted = true }
                if case .complete = outcome, auditsVanishedRecords, audit == .idle { audit = .wanted }
                converted = .finished(outcome)
            case .noted(let note):
                // A record the client could not take (it came during a count, or while the latest record is being
                // compared): rule 4's catch-up takes it after a complete procedure, as one arriving between them.
                if case .recordOutsideProcedure = note { catchUpWanted = true }
                converted = .noted(note)
            case .confirmLatest(let key, let epoch):
                guard let value = answer[key] else {
                    // Never: the client names a key from the answer it was given. Nothing to compare: undecided.
                    out += absorb(client.latestConfirmed(nil, at: now), now: now)
                    continue
                }
                converted = .compareLatestRecord(epoch: epoch, key: key, value: value)
            }
            out += emit(converted)
        }
        return out + (awaitingStore ? [] : betweenProcedures(now: now))
    }

    /// Passes an order on, or holds it behind a store in flight.
    private mutating func emit(_ order: Order) -> [Order] {
        if awaitingStore {
            held.append(order)
            return []
        }
        if case .store(let batch) = order {
            awaitingStore = true
            pendingCursor = batch.cursor
        }
        return [order]
    }

    /// What may start between procedures, in order: the next count of an audit under way (rule 8), a backfill
    /// asked during a deletion or an audit (rule 6), a catch-up (rule 4: after a complete procedure, when a record
    /// came outside), the deletion's facts (rule 7), the audit's keys (rule 8).
    private mutating func betweenProcedures(now: Timestamp) -> [Order] {
        guard linkUp, !abandoned, !awaitingStore, !client.isRunning, deletion != .readingAcknowledgements, audit != .readingKeys else { return [] }
        if case .counting(var search) = audit { return continueAudit(&search, now: now) }
        if backfillWanted {
            backfillWanted = false
            catchUpWanted = false
            return startProcedure(now: now)
        }
        if catchUpWanted {
            guard case .complete = lastOutcome else {
                if lastOutcome != nil { catchUpWanted = false }  // interrupted or refused: not on this connection
                return []
            }
            catchUpWanted = false
            return startProcedure(now: now)
        }
        if acknowledgementsWanted {
            acknowledgementsWanted = false
            if deletion == .idle {  // not when the device refused a deletion on this connection
                guard let last = client.cursor.last else { return [.deletionDeclined(.nothingCommitted)] + betweenProcedures(now: now) }
                deletion = .readingAcknowledgements
                return [.readAcknowledgements(epoch: client.cursor.epoch, through: last)]
            }
        }
        guard audit == .wanted else { return [] }
        let cursor = client.cursor
        guard configuration.keys == .sequenceNumber, cursor.fence == nil, let last = cursor.last else {
            audit = .done
            return [.auditFinished(epoch: cursor.epoch, .notApplicable)]
        }
        audit = .readingKeys
        return [.readRecordKeys(epoch: cursor.epoch, through: last)]
    }

    /// Rule 8: the search's next count, or its finding.
    private mutating func continueAudit(_ search: inout VanishedRecordSearch, now: Timestamp) -> [Order] {
        let epoch = client.cursor.epoch
        guard let range = search.nextRange() else {
            audit = .done
            return [.auditFinished(epoch: epoch, .finding(search.finding ?? .vanished([])))] + betweenProcedures(now: now)
        }
        audit = .counting(search)
        let orders: [RecordAccessOrder]
        do throws(RecordCountRefusal) {
            orders = try client.countRecords(in: range, at: now)
        } catch {
            audit = .done
            return [.auditFinished(epoch: epoch, .refusedByClient(error))] + betweenProcedures(now: now)
        }
        return absorb(orders, now: now)
    }

    /// A new procedure from the committed cursor (a catch-up or a backfill).
    private mutating func startProcedure(now: Timestamp) -> [Order] {
        client = RecordAccessClient(configuration: configuration, cursor: client.cursor)
        procedures += 1
        answer = [:]
        return absorb(client.start(now: now), now: now)
    }
}
