import TetherPrimitives

/// Takes a device's stored records from a saved cursor over the Record Access Control Point: a sans-I/O state
/// machine. Everything that affects its decisions lives in this file.
///
/// Inputs are facts (`start`, `recordReceived`, `indicationReceived`, `writeFailed`, `timerFired`, `disconnected`),
/// outputs are orders (`RecordAccessOrder`: write, commit, arm a timer, finish). No clock, no I/O, no randomness of
/// its own: time comes with every input and the retry jitter from a seeded `SplitMix64`. One client serves one
/// connection; the next connection makes a new one from the committed cursor.
///
/// Rules (the RACP procedures of GLS v1.0 and CGMS v1.0.1; GSS §3.178):
/// 1. One request at a time: a report ends with one Response Code indication, and the client writes nothing else
///    before it (apart from Abort, the only op code a server takes while a procedure runs).
/// 2. The transfer asks for "≥ cursor + 1" (filter type 0x01, the Sequence Number or the CGM Time Offset), or for
///    all records when nothing was committed yet; when the device does not support "≥", for all records, filtered
///    here. If `asksForCountFirst`, Report Number of Stored Records with the same filter comes first; 0 skips the
///    transfer.
/// 3. Records are committed only after the Success response, each once, with the cursor in the same commit. The
///    cursor moves only to the highest key received in order: for sequence numbers, through the consecutive run
///    from cursor + 1; a gap stops it, and the rest is asked for again at once ("≥ first missing"). A number
///    missing from two answers in a row is one the device does not have (deleted, or never made), and is passed.
///    CGM time offsets are minutes apart, so there gaps cannot be seen: the count (rule 2) checks the transfer
///    instead, and a short one is asked for once more before it is committed.
/// 4. Reset and wraparound: when the device's records seem to go below the cursor (no record "≥ cursor + 1", a
///    record at or below the cursor in the answer, or a cursor at 65535 where "≥ cursor + 1" cannot be written),
///    the client asks for the device's last record (operator 0x06, the most recent). Its key h is the device's
///    latest. h = cursor: nothing new. h > cursor: ask again. h < cursor: either the device numbers from below the
///    cursor again (memory cleared, a replaced meter, a new CGM session, or the uint16 key wrapped past 65535), or
///    its newest records were deleted on it (a person deleting readings on the meter: GLS numbers a new
///    measurement after the last one it made, whatever was deleted since). Keys cannot tell the two apart, and
///    taking the second for the first would store every record again in a new epoch. So for sequence numbers the
///    client orders `.confirmLatest`: the driver compares the device's record h with the one the gateway stored
///    under h in this epoch and answers `latestConfirmed`. The same record: the newest records went, nothing is
///    new, the cursor stays (the device's next record is numbered after it). Another record: a new epoch begins
///    (epoch + 1, nothing committed, fence = the old cursor), and records are taken from the start. No answer (the
///    store could not be read, or holds nothing under h to compare with): nothing is decided on this connection; a
///    later one decides once the device's latest is a record the store holds. A CGM's time offsets begin a new
///    epoch at once: a new session is the normal case there.
///    The device's keys are unique, so its records keyed above h are the earlier epoch's, still stored and already
///    committed: in a fenced epoch, records above the device's latest are dropped, and every connection begins
///    with the probe. The fence lifts when the device's latest reaches it.
/// 5. 0xFE (procedure already in progress), Server Busy and Procedure Not Completed: the request is retried after a
///    full-jitter backoff, at most `retryLimit` times. 0xFD (indications not enabled) and other ATT errors finish
///    the procedure refused; so does a response code saying the device cannot do the request.
/// 6. Time-outs: no record or response within `responseTimeout` of a write, or a record stream that pauses for
///    `recordTimeout`: the client writes Abort, waits `abortTimeout` for its answer, and finishes interrupted.
///    Records not yet committed are dropped; the next connection takes them again from the cursor.
/// 7. A disconnect finishes the procedure interrupted at once, with the committed cursor.
/// 8. Deleting device records is its own procedure, started only by `deleteRecords(permit:at:)` with a permit the
///    deletion policy grants, for committed records of the current epoch.
/// 9. Counting the device's records within a range of sequence numbers is its own procedure too, started only by
///    `countRecords(in:at:)`, for committed keys of the current, unfenced epoch (`VanishedRecordSearch` asks). It
///    ends `.counted` (No Records Found, which some meters answer for an empty range, is a count of 0); busy and
///    not-completed answers are retried as in rule 5, anything else refuses it.
public struct RecordAccessClient: Sendable {
    public let configuration: RecordAccessConfiguration
    /// The cursor of the last commit ordered (or the one the client was created with).
    public private(set) var cursor: RecordCursor
    private var random: SplitMix64
    private var phase: Phase = .idle
    private var linkUp = true
    private var connection = ConnectionFacts()

    enum Step: Hashable, Sendable {
        case count
        case transfer
        case probe
        case delete(through: UInt16)
        case countRange(ClosedRange<UInt16>)
    }

    enum Phase: Sendable {
        case idle
        case awaiting(Request)
        /// Rule 4: the device's latest key is below the cursor; waiting for `latestConfirmed`.
        case confirmingLatest(UInt16)
        case backingOff(Step, until: Timestamp)
        case aborting(RecordAccessOutcome, deadline: Timestamp)
        case finished(RecordAccessOutcome)
    }

    struct Request: Sendable {
        var step: Step
        var selection: RecordSelection
        var deadline: Timestamp
        /// Keys taken (transfer: new, in-range keys; probe: every key).
        var received: Set<UInt16> = []
        var recordsSeen = 0
    }

    /// What this connection has learned so far.
    struct ConnectionFacts: Sendable {
        var requests = 0
        var retries = 0
        var counted: UInt32?
        /// The count still to check a CGM transfer against (rule 3); used once.
        var countToCheck: UInt32?
        var confirmingShortTransfer = false
        var deviceLatest: UInt16?
        var probed = false
        var sawAtOrBelowCursor = false
        /// Keys missing from the previous answer in this connection (rule 3: missing twice = absent).
        var previouslyMissing: [ClosedRange<Int>] = []
        var greaterOrEqualUnsupported = false
    }

    public init(configuration: RecordAccessConfiguration = RecordAccessConfiguration(), cursor: RecordCursor = .start) {
        self.configuration = configuration
        self.cursor = cursor
        random = SplitMix64(seed: configuration.seed)
    }

    // MARK: Observation

    public var isRunning: Bool {
        switch phase {
        case .awaiting, .backingOff, .aborting, .confirmingLatest: true
        case .idle, .finished: false
        }
    }

    public var outcome: RecordAccessOutcome? {
        if case .finished(let outcome) = phase { return outcome }
        return nil
    }

    /// The instant the driver's timer should be armed for, if any.
    public var deadline: Timestamp? {
        switch phase {
        case .awaiting(let request): request.deadline
        case .backingOff(_, let until): until
        case .aborting(_, let deadline): deadline
        case .idle, .finished, .confirmingLatest: nil
        }
    }

    // MARK: Inputs

    /// Begins taking stored records (rule 2; rule 4 first in a fenced epoch or at the top of the key range).
    public mutating func start(now: Timestamp) -> [RecordAccessOrder] {
        guard case .idle = phase, linkUp else { return [] }
        if cursor.fence != nil || cursor.last == .max { return send(.probe, now: now) }
        return send(configuration.asksForCountFirst ? .count : .transfer, now: now)
    }

    /// The gateway parsed a record from the measurement characteristic: its Sequence Number (or CGM Time Offset).
    public mutating func recordReceived(sequence key: UInt16, at now: Timestamp) -> [RecordAccessOrder] {
        guard case .awaiting(var request) = phase else { return [.noted(.recordOutsideProcedure(key))] }
        var orders: [RecordAccessOrder] = []
        switch request.step {
        case .count, .delete, .countRange:
            return [.noted(.recordOutsideProcedure(key))]
        case .probe:
            request.received.insert(key)
        case .transfer:
            if let last = cursor.last, key <= last {
                connection.sawAtOrBelowCursor = true
                orders.append(.noted(.recordAtOrBelowCursor(key)))
            } else if cursor.fence != nil, key > (connection.deviceLatest ?? .max) {
                orders.append(.noted(.earlierEpochRecord(key)))
            } else if !request.received.insert(key).inserted {
                orders.append(.noted(.duplicateRecord(key)))
            }
        }
        // Rule 6: a stream that keeps coming keeps the request alive.
        request.recordsSeen += 1
        request.deadline = now.advanced(by: configuration.recordTimeout)
        phase = .awaiting(request)
        return orders + [.armTimer(at: request.deadline)]
    }

    /// The control point indicated these bytes.
    public mutating func indicationReceived(bytes: [UInt8], at now: Timestamp) -> [RecordAccessOrder] {
        let response: RecordAccessResponse
        do throws(RecordAccessResponse.DecodingError) {
            response = try RecordAccessResponse.decode(bytes)
        } catch {
            return [.noted(.malformedIndication(error))]
        }
        switch phase {
        case .awaiting(let request):
            return answer(request, with: response, now: now)
        case .aborting(let outcome, _):
            if case .responseCode(.abortOperation, _) = response { return finish(outcome) }
            return [.noted(.unexpectedResponse(response))]
        case .idle, .backingOff, .finished, .confirmingLatest:
            return [.noted(.unexpectedResponse(response))]
        }
    }

    /// The write of the request in flight failed with this ATT error code (rule 5).
    public mutating func writeFailed(attError code: UInt8, at now: Timestamp) -> [RecordAccessOrder] {
        let error = RecordAccessATTError(code: code, inCGMService: configuration.keys == .timeOffset)
        switch phase {
        case .awaiting(let request):
            switch error {
            case .procedureAlreadyInProgress:
                return retry(request.step, because: .procedureAlreadyInProgress, now: now)
            case .clientCharacteristicConfigurationImproperlyConfigured:
                return finish(.refused(.indicationsNotEnabled, cursor: cursor))
            case .missingCRC, .invalidCRC, .other:
                return finish(.refused(.attError(error), cursor: cursor))
            }
        case .aborting(let outcome, _):
            return finish(outcome)
        case .idle, .backingOff, .finished, .confirmingLatest:
            return []
        }
    }

    /// The timer armed last has fired (an earlier instant than the deadline is stale and changes nothing).
    public mutating func timerFired(at now: Timestamp) -> [RecordAccessOrder] {
        switch phase {
        case .awaiting(let request):
            guard now >= request.deadline else { return [] }
            let reason: RecordAccessInterruption = request.recordsSeen == 0 ? .responseTimedOut : .recordsStopped
            return abort(.interrupted(reason, cursor: cursor), now: now)
        case .backingOff(let step, let until):
            guard now >= until else { return [] }
            return send(step, now: now)
        case .aborting(let outcome, let deadline):
            guard now >= deadline else { return [] }
            return finish(outcome)
        case .idle, .finished, .confirmingLatest:
            return []
        }
    }

    /// The link went down (rule 7).
    public mutating func disconnected(at now: Timestamp) -> [RecordAccessOrder] {
        linkUp = false
        switch phase {
        case .finished:
            return []
        case .aborting(let outcome, _):
            return finish(outcome)
        case .idle, .awaiting, .backingOff, .confirmingLatest:
            return finish(.interrupted(.disconnected, cursor: cursor))
        }
    }

    /// The driver's answer to `.confirmLatest` (rule 4): whether the device's latest record is the one the gateway
    /// stored under its key in this epoch; nil when the store could not say.
    public mutating func latestConfirmed(_ sameRecord: Bool?, at now: Timestamp) -> [RecordAccessOrder] {
        guard case .confirmingLatest(let latest) = phase else { return [] }
        guard linkUp else { return finish(.interrupted(.disconnected, cursor: cursor)) }
        switch sameRecord {
        case true?:
            return [.noted(.newestRecordsGone(deviceLatest: latest))] + finish(.complete(cursor: cursor, counted: connection.counted))
        case false?:
            return beginEpoch(deviceLatest: latest, now: now)
        case nil:
            return finish(.interrupted(.latestUnconfirmed, cursor: cursor))
        }
    }

    /// Deletes the device's records keyed up to the permit's acknowledged key (rule 8). Only between procedures,
    /// on a live link, for committed records of the current, unfenced epoch.
    public mutating func deleteRecords(permit: RecordDeletionPermit, at now: Timestamp) throws(RecordDeletionRefusal) -> [RecordAccessOrder] {
        guard linkUp else { throw .notConnected }
        switch phase {
        case .idle, .finished: break
        case .awaiting, .backingOff, .aborting, .confirmingLatest: throw .procedureRunning
        }
        guard permit.epoch == cursor.epoch else { throw .permitForAnotherEpoch(permit: permit.epoch, cursor: cursor.epoch) }
        guard cursor.fence == nil else { throw .fencedEpoch }
        guard let last = cursor.last, permit.acknowledgedThrough <= last else {
            throw .beyondCommittedCursor(through: permit.acknowledgedThrough, cursor: cursor)
        }
        connection = ConnectionFacts()
        return send(.delete(through: permit.acknowledgedThrough), now: now)
    }

    /// Counts the device's records keyed within `range` (rule 9). Only between procedures, on a live link, for a
    /// sequence-numbered stream's committed keys of the current, unfenced epoch.
    public mutating func countRecords(in range: ClosedRange<UInt16>, at now: Timestamp) throws(RecordCountRefusal) -> [RecordAccessOrder] {
        guard linkUp else { throw .notConnected }
        switch phase {
        case .idle, .finished: break
        case .awaiting, .backingOff, .aborting, .confirmingLatest: throw .procedureRunning
        }
        guard configuration.keys == .sequenceNumber else { throw .notSequenceNumbered }
        guard cursor.fence == nil else { throw .fencedEpoch }
        guard let last = cursor.last, range.upperBound <= last else { throw .beyondCommittedCursor(range: range, cursor: cursor) }
        connection = ConnectionFacts()
        return send(.countRange(range), now: now)
    }

    // MARK: Answers

    private mutating func answer(_ request: Request, with response: RecordAccessResponse, now: Timestamp) -> [RecordAccessOrder] {
        switch (request.step, response) {
        case (.count, .numberOfStoredRecords(let count)):
            connection.retries = 0
            connection.counted = count
            connection.countToCheck = count
            connection.confirmingShortTransfer = false
            if count > 0 { return send(.transfer, now: now) }
            return cursor.last == nil ? finish(.complete(cursor: cursor, counted: count)) : send(.probe, now: now)
        case (.count, .responseCode(.reportNumberOfStoredRecords, let code)):
            switch code {
            case .serverBusy: return retry(.count, because: .serverBusy, now: now)
            case .procedureNotCompleted: return retry(.count, because: .procedureNotCompleted, now: now)
            default: return send(.transfer, now: now)  // the count is optional (rule 2)
            }
        case (.transfer, .responseCode(.reportStoredRecords, let code)):
            return transferEnded(request, code: code, now: now)
        case (.probe, .responseCode(.reportStoredRecords, let code)):
            return probeEnded(request, code: code, now: now)
        case (.countRange(let range), .numberOfStoredRecords(let count)):
            return finish(.counted(range, count: count, cursor: cursor))
        case (.countRange(let range), .responseCode(.reportNumberOfStoredRecords, let code)):
            switch code {
            // Some meters answer an empty range with No Records Found rather than a count of 0.
            case .noRecordsFound: return finish(.counted(range, count: 0, cursor: cursor))
            case .serverBusy: return retry(request.step, because: .serverBusy, now: now)
            case .procedureNotCompleted: return retry(request.step, because: .procedureNotCompleted, now: now)
            default: return finish(.refused(.unsupported(.reportNumberOfStoredRecords, code), cursor: cursor))
            }
        case (.delete(let through), .responseCode(.deleteStoredRecords, let code)):
            switch code {
            case .success, .noRecordsFound: return finish(.deleted(through: through, cursor: cursor))
            case .serverBusy: return retry(request.step, because: .serverBusy, now: now)
            case .procedureNotCompleted: return retry(request.step, because: .procedureNotCompleted, now: now)
            default: return finish(.refused(.unsupported(.deleteStoredRecords, code), cursor: cursor))
            }
        default:
            return [.noted(.unexpectedResponse(response))]
        }
    }

    private mutating func transferEnded(_ request: Request, code: RecordAccessResponseCode, now: Timestamp) -> [RecordAccessOrder] {
        switch code {
        case .success, .noRecordsFound:
            connection.retries = 0
            if request.received.isEmpty {
                if connection.sawAtOrBelowCursor || cursor.last != nil, !connection.probed { return send(.probe, now: now) }
                return finish(.complete(cursor: cursor, counted: connection.counted))
            }
            return commitTransfer(request, now: now)
        case .serverBusy:
            return retry(.transfer, because: .serverBusy, now: now)
        case .procedureNotCompleted:
            return retry(.transfer, because: .procedureNotCompleted, now: now)
        case .opCodeNotSupported, .invalidOperator, .operatorNotSupported, .invalidOperand, .operandNotSupported,
            .abortUnsuccessful, .unknown:
            if case .greaterThanOrEqualTo = request.selection, code.isUnsupportedRequest {
                connection.greaterOrEqualUnsupported = true
                return [.noted(.fallingBackToAllRecords)] + send(.transfer, now: now)
            }
            return finish(.refused(.unsupported(.reportStoredRecords, code), cursor: cursor))
        }
    }

    /// Rule 3: commit what came in order, then ask for the rest, probe, or finish.
    private mutating func commitTransfer(_ request: Request, now: Timestamp) -> [RecordAccessOrder] {
        var orders: [RecordAccessOrder] = []
        // Rule 3: the count checks what keys cannot (CGM time offsets; the start of a transfer from no cursor).
        if configuration.keys == .timeOffset || cursor.last == nil, let counted = connection.countToCheck,
            request.received.count < counted, !connection.confirmingShortTransfer
        {
            connection.confirmingShortTransfer = true
            return [.noted(.shortTransfer(received: request.received.count, counted: counted))] + send(.transfer, now: now)
        }
        connection.countToCheck = nil
        let run = inOrderRun(of: request.received)
        connection.previouslyMissing = run.missing
        if let last = run.last {
            var next = cursor
            next.last = last
            guard commit(run.keys, to: next, into: &orders) else { return orders + finishMovingBack(to: next) }
        }
        if let first = run.beyondGap.first {
            orders.append(.noted(.gap(after: cursor.last, next: first)))
            return orders + send(.transfer, now: now)
        }
        // Rule 4: below-cursor records ask for the probe; so does a cursor now at the top, where the next record
        // can only be numbered from below.
        if connection.sawAtOrBelowCursor || cursor.last == .max, !connection.probed { return orders + send(.probe, now: now) }
        return orders + finish(.complete(cursor: cursor, counted: connection.counted))
    }

    /// The keys that extend the cursor in order, the new last key, the keys past a gap and the keys missing.
    private func inOrderRun(of received: Set<UInt16>) -> (keys: [UInt16], last: UInt16?, beyondGap: [UInt16], missing: [ClosedRange<Int>]) {
        let sorted = received.sorted()
        guard let highest = sorted.last else { return ([], nil, [], []) }
        // With nothing committed the run starts at the oldest key, which after a wrap is not the lowest.
        let start = cursor.last.map { Int($0) + 1 } ?? Int(Self.circularStart(of: sorted))
        switch configuration.keys {
        case .timeOffset:
            let keys = sorted.filter { Int($0) >= start }
            return (keys, keys.last, [], [])
        case .sequenceNumber:
            var next = start
            while next <= Int(highest) {
                if received.contains(UInt16(next)) {
                    next += 1
                } else if let absent = connection.previouslyMissing.first(where: { $0.contains(next) }) {
                    next = absent.upperBound + 1
                } else {
                    break
                }
            }
            let keys = sorted.filter { Int($0) >= start && Int($0) < next }
            let beyond = sorted.filter { Int($0) >= next }
            // The cursor stops at the last key received, not at absent keys passed after it: it names a record.
            // The keys missing from there on are remembered, as ranges, for the next asking.
            let from = keys.last.map { Int($0) + 1 } ?? start
            var missing: [ClosedRange<Int>] = []
            var expected = from
            for key in sorted where Int(key) >= from {
                if Int(key) > expected { missing.append(expected...(Int(key) - 1)) }
                expected = Int(key) + 1
            }
            return (keys, keys.last, beyond, missing)
        }
    }

    /// The oldest of a set of uint16 keys read as a circle: the key after the widest hole between neighbours,
    /// counting the hole from the highest key round to the lowest. Without a wrap that hole is the widest and the
    /// answer is the lowest key; a set like 65530…65535, 0…3 starts at 65530 (rule 4: 0…3 are a new epoch's).
    static func circularStart(of sorted: [UInt16]) -> UInt16 {
        guard let lowest = sorted.first, let highest = sorted.last else { return 0 }
        var start = lowest
        var widest = Int(lowest) + 65_536 - Int(highest)
        for (before, after) in zip(sorted, sorted.dropFirst()) where Int(after) - Int(before) > widest {
            widest = Int(after) - Int(before)
            start = after
        }
        return start
    }

    /// Rule 4: what the device's latest record says about the cursor.
    private mutating func probeEnded(_ request: Request, code: RecordAccessResponseCode, now: Timestamp) -> [RecordAccessOrder] {
        switch code {
        case .success, .noRecordsFound:
            break
        case .serverBusy:
            return retry(.probe, because: .serverBusy, now: now)
        case .procedureNotCompleted:
            return retry(.probe, because: .procedureNotCompleted, now: now)
        case .opCodeNotSupported, .invalidOperator, .operatorNotSupported, .invalidOperand, .operandNotSupported,
            .abortUnsuccessful, .unknown:
            return finish(.refused(.unsupported(.reportStoredRecords, code), cursor: cursor))
        }
        connection.retries = 0
        connection.probed = true
        guard let latest = request.received.max() else {
            return finish(.complete(cursor: cursor, counted: connection.counted))  // the device holds nothing
        }
        connection.deviceLatest = latest
        var orders: [RecordAccessOrder] = []
        if let fence = cursor.fence, latest >= fence {
            var next = cursor
            next.fence = nil
            guard commit([], to: next, into: &orders) else { return orders + finishMovingBack(to: next) }
            orders.append(.noted(.fenceLifted(next)))
        }
        guard let last = cursor.last else { return orders + startTransfer(now: now) }
        if latest == last { return orders + finish(.complete(cursor: cursor, counted: connection.counted)) }
        if latest > last { return orders + send(.transfer, now: now) }
        // Below the cursor: a renumbered device, or its newest records deleted (rule 4).
        guard configuration.keys == .sequenceNumber else { return orders + beginEpoch(deviceLatest: latest, now: now) }
        phase = .confirmingLatest(latest)
        return orders + [.cancelTimer, .confirmLatest(key: latest, epoch: cursor.epoch)]
    }

    /// Rule 4: the device numbers from below the cursor again: a new epoch, fenced at the old cursor.
    private mutating func beginEpoch(deviceLatest latest: UInt16, now: Timestamp) -> [RecordAccessOrder] {
        guard let last = cursor.last else { return startTransfer(now: now) }
        var orders: [RecordAccessOrder] = []
        let next = RecordCursor(
            epoch: cursor.epoch < .max ? cursor.epoch + 1 : cursor.epoch, last: nil, fence: max(last, cursor.fence ?? 0))
        guard commit([], to: next, into: &orders) else { return orders + finishMovingBack(to: next) }
        orders.append(.noted(.newEpoch(next, deviceLatest: latest)))
        connection.previouslyMissing = []
        connection.sawAtOrBelowCursor = false
        connection.countToCheck = nil
        return orders + startTransfer(now: now)
    }

    /// A transfer from no cursor (a first backfill or a new epoch) is counted first when configured: with nothing
    /// committed, a record lost at the very start would not show as a gap.
    private mutating func startTransfer(now: Timestamp) -> [RecordAccessOrder] {
        send(configuration.asksForCountFirst && cursor.last == nil ? .count : .transfer, now: now)
    }

    // MARK: Orders

    private mutating func send(_ step: Step, now: Timestamp) -> [RecordAccessOrder] {
        guard linkUp else { return finish(.interrupted(.disconnected, cursor: cursor)) }
        guard connection.requests < configuration.requestLimit else {
            return finish(.interrupted(.requestLimitReached, cursor: cursor))
        }
        connection.requests += 1
        let selection: RecordSelection
        let request: RecordAccessRequest
        switch step {
        case .count:
            // In a fenced epoch the earlier epochs' records are not to be counted: only those up to the latest.
            if cursor.last == nil, cursor.fence != nil, let latest = connection.deviceLatest {
                selection = .lessThanOrEqualTo(filterValue(latest))
            } else {
                selection = afterCursor
            }
            request = .reportNumberOfStoredRecords(selection)
        case .transfer:
            selection = connection.greaterOrEqualUnsupported ? .allRecords : afterCursor
            request = .reportStoredRecords(selection)
        case .probe:
            selection = .lastRecord
            request = .reportStoredRecords(selection)
        case .delete(let through):
            selection = .lessThanOrEqualTo(filterValue(through))
            request = .deleteStoredRecords(selection)
        case .countRange(let range):
            selection = .withinRange(.sequenceNumbers(range))
            request = .reportNumberOfStoredRecords(selection)
        }
        let deadline = now.advanced(by: configuration.responseTimeout)
        phase = .awaiting(Request(step: step, selection: selection, deadline: deadline))
        return [.write(request.bytes), .armTimer(at: deadline)]
    }

    /// "≥ cursor + 1", or all records when nothing is committed in this epoch (or the cursor is at the top, where
    /// only the probe is sent; rule 4).
    private var afterCursor: RecordSelection {
        guard let last = cursor.last, last < .max else { return .allRecords }
        return .greaterThanOrEqualTo(filterValue(last + 1))
    }

    private func filterValue(_ key: UInt16) -> RecordFilterValue {
        configuration.keys == .sequenceNumber ? .sequenceNumber(key) : .timeOffset(key)
    }

    private mutating func commit(_ keys: [UInt16], to next: RecordCursor, into orders: inout [RecordAccessOrder]) -> Bool {
        guard cursor.allowsMove(to: next) else { return false }
        cursor = next
        orders.append(.commit(RecordCommit(keys: keys, cursor: next)))
        return true
    }

    private mutating func finishMovingBack(to next: RecordCursor) -> [RecordAccessOrder] {
        finish(.refused(.cursorWouldMoveBack(.backward(from: cursor, to: next)), cursor: cursor))
    }

    /// Rule 5: full jitter, bounded attempts.
    private mutating func retry(_ step: Step, because reason: RecordAccessInterruption, now: Timestamp) -> [RecordAccessOrder] {
        connection.retries += 1
        guard connection.retries <= configuration.retryLimit else { return finish(.interrupted(reason, cursor: cursor)) }
        let ceiling = min(
            configuration.backoffCap.nanoseconds,
            configuration.backoffBase.nanoseconds << Int64(min(connection.retries - 1, 30)))
        let delay = Duration.nanoseconds(Int64.random(in: 0...max(ceiling, 0), using: &random))
        let until = now.advanced(by: delay)
        phase = .backingOff(step, until: until)
        return [.noted(.retrying(after: delay, attempt: connection.retries)), .armTimer(at: until)]
    }

    private mutating func abort(_ outcome: RecordAccessOutcome, now: Timestamp) -> [RecordAccessOrder] {
        guard linkUp else { return finish(outcome) }
        let deadline = now.advanced(by: configuration.abortTimeout)
        phase = .aborting(outcome, deadline: deadline)
        return [.write(RecordAccessRequest.abortOperation.bytes), .armTimer(at: deadline)]
    }

    private mutating func finish(_ outcome: RecordAccessOutcome) -> [RecordAccessOrder] {
        phase = .finished(outcome)
        return [.cancelTimer, .finished(outcome)]
    }
}
