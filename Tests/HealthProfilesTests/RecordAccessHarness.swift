import TetherPrimitives
@testable import HealthProfiles

/// A stored-records device as GLS/CGMS describe the server side of the RACP (GSS §3.178), kept apart from the
/// client: records in storage order, unique keys, numeric filters, "last" = the most recent record.
struct SimulatedRecordDevice {
    struct Record: Hashable {
        var key: UInt16
        /// Which reading this is, whatever its key: the invariants count readings, not keys.
        var identity: Int
    }

    var records: [Record] = []
    var nextKey: UInt16 = 1
    var nextIdentity = 0
    var capacity = 1_000
    /// Keys step by this (1 for sequence numbers, 5 for a CGM's 5-minute time offsets).
    var step: UInt16 = 1
    var keys: RecordKeyKind = .sequenceNumber
    /// A device whose "≥" filter is not supported (answers Operator Not Supported).
    var supportsGreaterOrEqual = true

    enum Event: Hashable {
        case record(Record)
        case indication([UInt8])
    }

    /// A new reading (the oldest is overwritten when memory is full). The key wraps past 65535 as a uint16 does.
    mutating func measure(count: Int = 1) {
        for _ in 0..<count {
            if records.count >= capacity { records.removeFirst() }
            records.append(Record(key: nextKey, identity: nextIdentity))
            nextIdentity += 1
            nextKey &+= step
        }
    }

    /// Memory cleared (or a replaced meter): numbering starts again at `from`.
    mutating func reset(numberingFrom start: UInt16) {
        records.removeAll()
        nextKey = start
    }

    func matching(_ selection: RecordSelection) -> [Record]? {
        func key(_ value: RecordFilterValue) -> UInt16? {
            switch value {
            case .sequenceNumber(let key), .timeOffset(let key): key
            case .userFacingTime: nil
            }
        }
        switch selection {
        case .allRecords: return records
        case .firstRecord: return records.first.map { [$0] } ?? []
        case .lastRecord: return records.last.map { [$0] } ?? []
        case .greaterThanOrEqualTo(let value):
            guard supportsGreaterOrEqual, let low = key(value) else { return nil }
            return records.filter { $0.key >= low }
        case .lessThanOrEqualTo(let value):
            guard let high = key(value) else { return nil }
            return records.filter { $0.key <= high }
        case .withinRange(.sequenceNumbers(let range)), .withinRange(.timeOffsets(let range)):
            return records.filter { range.contains($0.key) }
        case .withinRange(.userFacingTimes):
            return nil
        }
    }

    /// Serves one written request: the records it reports, then its one response indication.
    mutating func serve(_ bytes: [UInt8]) -> [Event] {
        guard let request = try? RecordAccessRequest.decode(bytes, keys: keys) else {
            return [.indication([6, 0, bytes.first ?? 0, RecordAccessResponseCode.invalidOperand.rawValue])]
        }
        func respond(_ code: RecordAccessResponseCode) -> Event {
            .indication(RecordAccessResponse.responseCode(request: request.opCode, code: code).bytes)
        }
        switch request {
        case .abortOperation:
            return [respond(.success)]
        case .reportNumberOfStoredRecords(let selection):
            guard let found = matching(selection) else { return [respond(.operatorNotSupported)] }
            return [.indication(RecordAccessResponse.numberOfStoredRecords(UInt32(found.count)).bytes)]
        case .reportStoredRecords(let selection):
            guard let found = matching(selection) else { return [respond(.operatorNotSupported)] }
            return found.isEmpty ? [respond(.noRecordsFound)] : found.map(Event.record) + [respond(.success)]
        case .deleteStoredRecords(let selection):
            guard let found = matching(selection) else { return [respond(.operatorNotSupported)] }
            let doomed = Set(found)
            records.removeAll { doomed.contains($0) }
            return [respond(found.isEmpty ? .noRecordsFound : .success)]
        }
    }
}

/// What the transit and the device do wrong during one connection.
struct ConnectionFaults {
    /// Disconnect after this many delivered events.
    var disconnectAfter: Int?
    /// Answer this many writes with ATT 0xFE first.
    var procedureInProgress = 0
    /// Answer this many requests with Server Busy first.
    var serverBusy = 0
    /// Stop the answer to request number N (1-based) after this many events (no response follows).
    var stall: (request: Int, after: Int)?
    /// Lose this record once in transit.
    var loseOnce: UInt16?
    /// Deliver every record of the answer to request N twice, and the answer's records in reverse order.
    var duplicateAndReverse: Int?
}

/// The gateway side: runs a client against a device with a manual clock, plays the store, checks invariants.
struct RecordAccessHarness {
    var device: SimulatedRecordDevice
    var configuration: RecordAccessConfiguration
    var cursor = RecordCursor.start
    var now = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    /// The store: (epoch, key) → identity, and every identity committed.
    var committedByKey: [RecordKey: Int] = [:]
    var committedIdentities: [Int: Int] = [:]
    var violations: [String] = []
    var outcomes: [RecordAccessOutcome] = []
    var writes: [[UInt8]] = []
    var notes: [RecordAccessNote] = []

    struct RecordKey: Hashable { var epoch: UInt32, key: UInt16 }

    init(device: SimulatedRecordDevice, configuration: RecordAccessConfiguration = RecordAccessConfiguration()) {
        self.device = device
        self.configuration = configuration
    }

    /// One connection: a fresh client from the committed cursor, run until it finishes or the link drops.
    @discardableResult
    mutating func connect(_ faults: ConnectionFaults = ConnectionFaults()) -> RecordAccessOutcome? {
        var faults = faults
        var client = RecordAccessClient(configuration: configuration, cursor: cursor)
        var pending: [SimulatedRecordDevice.Event] = []
        var buffer: [UInt16: Int] = [:]  // the records of the request in flight, as the gateway parsed them
        var timer: Timestamp?
        var delivered = 0
        var requests = 0
        var finished: RecordAccessOutcome?

        func apply(_ orders: [RecordAccessOrder]) {
            for order in orders {
                switch order {
                case .write(let bytes):
                    writes.append(bytes)
                    buffer = [:]
                    pending = []
                    if faults.procedureInProgress > 0, bytes.first != RecordAccessOpCode.abortOperation.rawValue {
                        faults.procedureInProgress -= 1
                        apply(client.writeFailed(attError: 0xFE, at: now))
                        continue
                    }
                    if bytes.first != RecordAccessOpCode.abortOperation.rawValue { requests += 1 }
                    if faults.serverBusy > 0, bytes.first != RecordAccessOpCode.abortOperation.rawValue {
                        faults.serverBusy -= 1
                        pending = [.indication([6, 0, bytes[0], RecordAccessResponseCode.serverBusy.rawValue])]
                        continue
                    }
                    var events = device.serve(bytes)
                    if let stall = faults.stall, stall.request == requests, bytes.first != RecordAccessOpCode.abortOperation.rawValue {
                        events = Array(events.prefix(stall.after))
                    }
                    if faults.duplicateAndReverse == requests, bytes.first != RecordAccessOpCode.abortOperation.rawValue {
                        let records = events.filter { if case .record = $0 { true } else { false } }
                        events = records.reversed().flatMap { [$0, $0] } + events.filter { if case .indication = $0 { true } else { false } }
                    }
                    pending = events
                case .commit(let commit):
                    store(commit, buffer: buffer)
                case .armTimer(let at):
                    if at < now { violations.append("timer armed in the past") }
                    timer = at
                case .cancelTimer:
                    timer = nil
                case .finished(let outcome):
                    if finished != nil { violations.append("finished twice") }
                    finished = outcome
                case .noted(let note):
                    notes.append(note)
                case .confirmLatest(let key, let epoch):
                    // The store's side of rule 4: is the device's record under `key` the reading stored there?
                    let same = buffer[key].map { committedByKey[RecordKey(epoch: epoch, key: key)] == $0 }
                    apply(client.latestConfirmed(same ?? false, at: now))
                }
            }
        }

        apply(client.start(now: now))
        var steps = 0
        while finished == nil {
            steps += 1
            if steps > 100_000 { violations.append("no progress"); break }
            if let limit = faults.disconnectAfter, delivered >= limit {
                apply(client.disconnected(at: now))
                if finished == nil { violations.append("a disconnect did not finish the procedure") }
                break
            }
            if !pending.isEmpty {
                let event = pending.removeFirst()
                now = now.advanced(by: .milliseconds(15))
                delivered += 1
                switch event {
                case .record(let record):
                    if faults.loseOnce == record.key {
                        faults.loseOnce = nil
                        continue
                    }
                    buffer[record.key] = record.identity
                    apply(client.recordReceived(sequence: record.key, at: now))
                case .indication(let bytes):
                    apply(client.indicationReceived(bytes: bytes, at: now))
                }
            } else if let deadline = timer {
                now = max(now, deadline)
                timer = nil
                apply(client.timerFired(at: now))
            } else {
                violations.append("the client waits for nothing: \(client)")
                break
            }
        }
        if client.isRunning { violations.append("still running after it finished") }
        if let finished { outcomes.append(finished) }
        if client.cursor != cursor { violations.append("the client's cursor \(client.cursor) is not the committed one \(cursor)") }
        now = now.advanced(by: .seconds(60))
        return finished
    }

    private mutating func store(_ commit: RecordCommit, buffer: [UInt16: Int]) {
        if !cursor.allowsMove(to: commit.cursor) { violations.append("cursor moved back: \(cursor) → \(commit.cursor)") }
        if commit.keys != commit.keys.sorted() || Set(commit.keys).count != commit.keys.count {
            violations.append("commit keys not ascending and unique: \(commit.keys)")
        }
        if let last = commit.keys.last, last != commit.cursor.last { violations.append("cursor \(commit.cursor) is not the last key \(last)") }
        for key in commit.keys {
            guard let identity = buffer[key] else {
                violations.append("committed key \(key) that did not arrive in this request")
                continue
            }
            let slot = RecordKey(epoch: commit.cursor.epoch, key: key)
            if committedByKey[slot] != nil { violations.append("(epoch, key) \(slot) committed twice") }
            committedByKey[slot] = identity
            committedIdentities[identity, default: 0] += 1
            if committedIdentities[identity]! > 1 { violations.append("reading \(identity) (key \(key)) committed twice") }
        }
        cursor = commit.cursor
    }

    /// Every reading still on the device is stored exactly once.
    var missingReadings: [SimulatedRecordDevice.Record] {
        device.records.filter { committedIdentities[$0.identity] != 1 }
    }
}
