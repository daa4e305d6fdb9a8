import Testing
import TetherPrimitives
@testable import HealthProfiles

/// The RACP client's orders, step by step, for each rule of RecordAccessClient.swift.
@Suite struct RecordAccessClientTests {
    let t0 = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    func at(_ ms: Int64) -> Timestamp { t0.advanced(by: .milliseconds(ms)) }

    @Test func aFirstBackfillCountsThenTakesAllAndCommitsAfterSuccess() {
        var client = RecordAccessClient()
        #expect(client.start(now: t0) == [.write([4, 1]), .armTimer(at: at(30_000))])
        #expect(client.indicationReceived(bytes: [5, 0, 3, 0], at: at(10)) == [.write([1, 1]), .armTimer(at: at(30_010))])
        #expect(client.recordReceived(sequence: 1, at: at(20)) == [.armTimer(at: at(10_020))])
        _ = client.recordReceived(sequence: 2, at: at(30))
        _ = client.recordReceived(sequence: 3, at: at(40))
        let cursor = RecordCursor(epoch: 0, last: 3)
        #expect(client.cursor == .start, "nothing moves before the success response")
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(50)) == [
            .commit(RecordCommit(keys: [1, 2, 3], cursor: cursor)), .cancelTimer, .finished(.complete(cursor: cursor, counted: 3)),
        ])
        #expect(client.cursor == cursor)
    }

    @Test func resumesFromTheCursorWithGreaterOrEqualCursorPlusOne() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(epoch: 2, last: 0x00FF))
        #expect(client.start(now: t0).first == .write([0x01, 0x03, 0x01, 0x00, 0x01]))
        _ = client.recordReceived(sequence: 0x0100, at: at(10))
        let orders = client.indicationReceived(bytes: [6, 0, 1, 1], at: at(20))
        #expect(orders.first == .commit(RecordCommit(keys: [0x0100], cursor: RecordCursor(epoch: 2, last: 0x0100))))
    }

    @Test func aDisconnectMidTransferCommitsNothingAndTheNextConnectionTakesEverythingOnce() {
        var device = SimulatedRecordDevice()
        device.measure(count: 20)
        var harness = RecordAccessHarness(device: device)
        let first = harness.connect(ConnectionFaults(disconnectAfter: 12))
        #expect(first == .interrupted(.disconnected, cursor: .start))
        #expect(harness.committedIdentities.isEmpty)
        let second = harness.connect()
        #expect(second == .complete(cursor: RecordCursor(epoch: 0, last: 20), counted: 20))
        #expect(harness.missingReadings.isEmpty)
        #expect(harness.violations.isEmpty, "\(harness.violations)")
    }

    @Test func procedureAlreadyInProgressBacksOffWithJitterAndRetries() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false, seed: 7))
        _ = client.start(now: t0)
        let orders = client.writeFailed(attError: 0xFE, at: at(5))
        guard case .noted(.retrying(let delay, attempt: 1)) = orders.first, case .armTimer(let when) = orders.last else {
            Issue.record("expected a retry, got \(orders)")
            return
        }
        #expect(delay >= .zero && delay <= .milliseconds(500))
        #expect(when == at(5).advanced(by: delay))
        #expect(client.timerFired(at: at(4)) == [], "a timer before its deadline is stale")
        #expect(client.timerFired(at: when).first == .write([1, 1]))
        // The same seed draws the same delays; another seed, others.
        var same = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false, seed: 7))
        _ = same.start(now: t0)
        #expect(same.writeFailed(attError: 0xFE, at: at(5)) == orders)
    }

    @Test func procedureAlreadyInProgressGivesUpAfterTheRetryLimit() {
        var device = SimulatedRecordDevice()
        device.measure(count: 3)
        var harness = RecordAccessHarness(device: device, configuration: RecordAccessConfiguration(retryLimit: 2))
        #expect(harness.connect(ConnectionFaults(procedureInProgress: 3)) == .interrupted(.procedureAlreadyInProgress, cursor: .start))
        var patient = RecordAccessHarness(device: device, configuration: RecordAccessConfiguration(retryLimit: 2))
        #expect(patient.connect(ConnectionFaults(procedureInProgress: 2)) == .complete(cursor: RecordCursor(last: 3), counted: 3))
        #expect(patient.violations.isEmpty)
    }

    @Test func serverBusyIsRetriedLater() {
        var device = SimulatedRecordDevice()
        device.measure(count: 4)
        var harness = RecordAccessHarness(device: device)
        #expect(harness.connect(ConnectionFaults(serverBusy: 2)) == .complete(cursor: RecordCursor(last: 4), counted: 4))
        #expect(harness.notes.filter { if case .retrying = $0 { true } else { false } }.count == 2)
        #expect(harness.violations.isEmpty)
    }

    @Test func aResponseThatNeverComesIsAbortedAndResumable() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false))
        _ = client.start(now: t0)
        #expect(client.timerFired(at: at(30_000)) == [.write([3, 0]), .armTimer(at: at(35_000))])
        #expect(client.indicationReceived(bytes: [6, 0, 3, 1], at: at(30_100)) == [
            .cancelTimer, .finished(.interrupted(.responseTimedOut, cursor: .start)),
        ])
        // And when even the abort goes unanswered, the client finishes at the abort's deadline.
        var silent = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false))
        _ = silent.start(now: t0)
        _ = silent.timerFired(at: at(30_000))
        #expect(silent.timerFired(at: at(35_000)) == [.cancelTimer, .finished(.interrupted(.responseTimedOut, cursor: .start))])
    }

    @Test func aRecordStreamThatStopsIsAbortedWithoutCommittingItsRecords() {
        var device = SimulatedRecordDevice()
        device.measure(count: 10)
        var harness = RecordAccessHarness(device: device, configuration: RecordAccessConfiguration(asksForCountFirst: false))
        #expect(harness.connect(ConnectionFaults(stall: (request: 1, after: 4))) == .interrupted(.recordsStopped, cursor: .start))
        #expect(harness.writes.last == [3, 0])
        #expect(harness.committedIdentities.isEmpty)
        harness.connect()
        #expect(harness.missingReadings.isEmpty)
        #expect(harness.violations.isEmpty)
    }

    @Test func recordsOutOfOrderAndDuplicatedAreCommittedOnceInOrder() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(last: 10))
        _ = client.start(now: t0)
        for key: UInt16 in [13, 11, 12, 12] { _ = client.recordReceived(sequence: key, at: at(10)) }
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(20)).first
            == .commit(RecordCommit(keys: [11, 12, 13], cursor: RecordCursor(last: 13))))
    }

    @Test func aGapStopsTheCursorAndTheRestIsAskedAgain() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(last: 3))
        _ = client.start(now: t0)
        for key: UInt16 in [4, 5, 7, 8] { _ = client.recordReceived(sequence: key, at: at(10)) }
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(20)) == [
            .commit(RecordCommit(keys: [4, 5], cursor: RecordCursor(last: 5))),
            .noted(.gap(after: 5, next: 7)),
            .write([1, 3, 1, 6, 0]), .armTimer(at: at(30_020)),
        ])
        // The device still has no 6: missing twice, it is passed.
        for key: UInt16 in [7, 8] { _ = client.recordReceived(sequence: key, at: at(30)) }
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(40)).first
            == .commit(RecordCommit(keys: [7, 8], cursor: RecordCursor(last: 8))))
    }

    @Test func aRecordLostInTransitIsTakenOnTheSecondAsking() {
        var device = SimulatedRecordDevice()
        device.measure(count: 8)
        var harness = RecordAccessHarness(device: device)
        #expect(harness.connect(ConnectionFaults(loseOnce: 5)) == .complete(cursor: RecordCursor(last: 8), counted: 8))
        #expect(harness.missingReadings.isEmpty)
        #expect(harness.violations.isEmpty)
    }

    /// Issue 14, item 2: a sequence reset (memory cleared, replaced meter) starts a new epoch, not a skip.
    @Test func aSequenceResetStartsANewEpochInsteadOfSkippingRecords() {
        var client = RecordAccessClient(cursor: RecordCursor(epoch: 0, last: 40))
        #expect(client.start(now: t0).first == .write([4, 3, 1, 41, 0]))
        #expect(client.indicationReceived(bytes: [5, 0, 0, 0], at: at(10)).first == .write([1, 6]), "count 0 above the cursor: probe")
        _ = client.recordReceived(sequence: 3, at: at(20))
        let epoch1 = RecordCursor(epoch: 1, last: nil, fence: 40)
        // Rule 4: below the cursor, the device's record 3 is compared with the one stored under 3: another reading.
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(30)) == [.cancelTimer, .confirmLatest(key: 3, epoch: 0)])
        #expect(client.isRunning && client.deadline == nil)
        #expect(client.latestConfirmed(false, at: at(30)) == [
            .commit(RecordCommit(keys: [], cursor: epoch1)), .noted(.newEpoch(epoch1, deviceLatest: 3)),
            // Counted first, up to the device's latest only: records above it are the earlier epoch's.
            .write([4, 2, 1, 3, 0]), .armTimer(at: at(30_030)),
        ])
        #expect(client.indicationReceived(bytes: [5, 0, 3, 0], at: at(35)).first == .write([1, 1]))
        for key: UInt16 in [1, 2, 3] { _ = client.recordReceived(sequence: key, at: at(40)) }
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(50)).first
            == .commit(RecordCommit(keys: [1, 2, 3], cursor: RecordCursor(epoch: 1, last: 3, fence: 40))))
    }

    /// Rule 4's other reading of a latest key below the cursor: a person deleted the newest readings on the meter
    /// (40 and 39 of 1…40). Its record 38 is the one stored: no new epoch, nothing is read again, the cursor stays;
    /// the meter's next reading, numbered 41, is taken from the cursor.
    @Test func newestRecordsDeletedOnTheDeviceAreNotANewEpoch() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(epoch: 0, last: 40))
        #expect(client.start(now: t0).first == .write([1, 3, 1, 41, 0]))
        #expect(client.indicationReceived(bytes: [6, 0, 1, 6], at: at(10)).first == .write([1, 6]), "no records found after the cursor: probe")
        _ = client.recordReceived(sequence: 38, at: at(20))
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(30)) == [.cancelTimer, .confirmLatest(key: 38, epoch: 0)])
        let cursor = RecordCursor(epoch: 0, last: 40)
        #expect(client.latestConfirmed(true, at: at(31)) == [
            .noted(.newestRecordsGone(deviceLatest: 38)), .cancelTimer, .finished(.complete(cursor: cursor, counted: nil)),
        ])
        #expect(client.cursor == cursor)

        // Through the harness: 40 readings stored, the newest two deleted on the meter, one taken: each reading once.
        var device = SimulatedRecordDevice()
        device.measure(count: 40)
        var harness = RecordAccessHarness(device: device, configuration: RecordAccessConfiguration(asksForCountFirst: false))
        harness.connect()
        harness.device.records.removeLast(2)
        #expect(harness.connect() == .complete(cursor: cursor, counted: nil))
        harness.device.measure(count: 1)
        #expect(harness.connect() == .complete(cursor: RecordCursor(epoch: 0, last: 41), counted: nil))
        #expect(harness.violations.isEmpty, "\(harness.violations)")
        #expect(harness.committedIdentities.count == 41 && harness.committedIdentities.values.allSatisfy { $0 == 1 })
        #expect(harness.notes.contains(.newestRecordsGone(deviceLatest: 38)))
    }

    /// Nothing decided when the store cannot say: interrupted, the cursor as it was, asked again next time.
    @Test func anUnconfirmedLatestDecidesNothing() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(epoch: 0, last: 40))
        _ = client.start(now: t0)
        _ = client.indicationReceived(bytes: [6, 0, 1, 6], at: at(10))
        _ = client.recordReceived(sequence: 38, at: at(20))
        _ = client.indicationReceived(bytes: [6, 0, 1, 1], at: at(30))
        #expect(client.latestConfirmed(nil, at: at(31)).last == .finished(.interrupted(.latestUnconfirmed, cursor: RecordCursor(epoch: 0, last: 40))))
        #expect(client.latestConfirmed(false, at: at(32)).isEmpty, "one answer")
    }

    @Test func recordsBelowTheCursorInAnswerToGreaterOrEqualProbeTheDevice() {
        // A reset device that ignores the filter: the probe shows its latest below the cursor.
        var device = SimulatedRecordDevice()
        device.measure(count: 50)
        var harness = RecordAccessHarness(device: device)
        harness.connect()
        harness.device.reset(numberingFrom: 1)
        harness.device.measure(count: 5)
        harness.device.supportsGreaterOrEqual = false
        harness.connect()
        #expect(harness.cursor == RecordCursor(epoch: 1, last: 5, fence: 50))
        #expect(harness.notes.contains(.fallingBackToAllRecords))
        #expect(harness.missingReadings.isEmpty)
        // A device that ignores the filter but was not reset: the old records are not taken again.
        var sloppy = SimulatedRecordDevice()
        sloppy.measure(count: 10)
        sloppy.supportsGreaterOrEqual = false
        var second = RecordAccessHarness(device: sloppy)
        second.connect()
        second.device.measure(count: 2)
        second.connect()
        #expect(second.cursor == RecordCursor(epoch: 0, last: 12))
        #expect(second.missingReadings.isEmpty)
        #expect(harness.violations.isEmpty && second.violations.isEmpty, "\(harness.violations) \(second.violations)")
    }

    /// Sequence numbers are uint16: past 65535 the device numbers from 0 again. A new epoch, fenced (see the design
    /// note): the records still stored from before the wrap are not taken again, those after it are all taken.
    @Test func wraparoundPast65535StartsAFencedEpochAndLosesOrDoublesNothing() {
        var device = SimulatedRecordDevice()
        device.nextKey = 65_520
        device.capacity = 30
        device.measure(count: 10)  // 65520…65529
        var harness = RecordAccessHarness(device: device)
        harness.connect()
        #expect(harness.cursor == RecordCursor(epoch: 0, last: 65_529))
        harness.device.measure(count: 12)  // 65530…65535, 0…5
        harness.connect()
        #expect(harness.cursor == RecordCursor(epoch: 1, last: 5, fence: 65_535))
        harness.device.measure(count: 30)  // 6…35: the pre-wrap records are overwritten
        harness.connect()
        harness.connect()
        // The fence stays until the new numbering reaches it (each connection probes first meanwhile).
        #expect(harness.cursor == RecordCursor(epoch: 1, last: 35, fence: 65_535))
        #expect(harness.missingReadings.isEmpty)
        #expect(harness.committedIdentities.count == 52)
        #expect(harness.violations.isEmpty, "\(harness.violations)")
    }

    /// A device first met across its wrap: its oldest records are 65530…65535, its newest 0…3. The first epoch
    /// takes the pre-wrap run, the next epoch the rest; nothing is taken out of order or twice.
    @Test func aDeviceFirstMetAcrossItsWrapIsTakenOldestFirst() {
        #expect(RecordAccessClient.circularStart(of: [0, 1, 2, 3, 65_530, 65_531, 65_535]) == 65_530)
        #expect(RecordAccessClient.circularStart(of: [1, 2, 5, 1_000, 1_010]) == 1)
        #expect(RecordAccessClient.circularStart(of: [7]) == 7)
        var device = SimulatedRecordDevice()
        device.nextKey = 65_530
        device.measure(count: 10)
        var harness = RecordAccessHarness(device: device)
        harness.connect()
        #expect(harness.cursor == RecordCursor(epoch: 1, last: 3, fence: 65_535))
        #expect(harness.committedByKey[.init(epoch: 0, key: 65_535)] == 5)
        #expect(harness.committedByKey[.init(epoch: 1, key: 0)] == 6)
        #expect(harness.missingReadings.isEmpty)
        #expect(harness.violations.isEmpty, "\(harness.violations)")
    }

    @Test func aCursorAtTheTopOfTheRangeProbesFirst() {
        var client = RecordAccessClient(cursor: RecordCursor(last: .max))
        #expect(client.start(now: t0).first == .write([1, 6]))
        _ = client.recordReceived(sequence: .max, at: at(10))
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(20)).last
            == .finished(.complete(cursor: RecordCursor(last: .max), counted: nil)))
    }

    @Test func indicationsNotEnabledAndOtherATTErrorsRefuse() {
        var client = RecordAccessClient()
        _ = client.start(now: t0)
        #expect(client.writeFailed(attError: 0xFD, at: at(1)) == [.cancelTimer, .finished(.refused(.indicationsNotEnabled, cursor: .start))])
        var cgm = RecordAccessClient(configuration: RecordAccessConfiguration(keys: .timeOffset))
        _ = cgm.start(now: t0)
        #expect(cgm.writeFailed(attError: 0x81, at: at(1)).last == .finished(.refused(.attError(.invalidCRC), cursor: .start)))
    }

    @Test func malformedAndUnexpectedIndicationsAreNotedAndChangeNothing() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(asksForCountFirst: false))
        _ = client.start(now: t0)
        #expect(client.indicationReceived(bytes: [6, 1, 1], at: at(1)) == [.noted(.malformedIndication(.operatorNotNull(opCode: 6, operator: 1)))])
        #expect(client.indicationReceived(bytes: [6, 0, 4, 1], at: at(2)) == [.noted(.unexpectedResponse(.responseCode(request: .reportNumberOfStoredRecords, code: .success)))])
        #expect(client.indicationReceived(bytes: [5, 0, 9, 0], at: at(3)) == [.noted(.unexpectedResponse(.numberOfStoredRecords(9)))])
        #expect(client.isRunning)
        #expect(client.deadline == at(30_000))
    }

    @Test func anUnsupportedCountIsSkippedAndAnUnsupportedReportRefuses() {
        var client = RecordAccessClient()
        _ = client.start(now: t0)
        #expect(client.indicationReceived(bytes: [6, 0, 4, 2], at: at(1)).first == .write([1, 1]))
        #expect(client.indicationReceived(bytes: [6, 0, 1, 2], at: at(2)).last
            == .finished(.refused(.unsupported(.reportStoredRecords, .opCodeNotSupported), cursor: .start)))
    }

    @Test func cgmTimeOffsetsCommitTheirHighestAndCheckTheCount() {
        var client = RecordAccessClient(configuration: RecordAccessConfiguration(keys: .timeOffset), cursor: RecordCursor(last: 100))
        #expect(client.start(now: t0).first == .write([4, 3, 1, 101, 0]))
        _ = client.indicationReceived(bytes: [5, 0, 3, 0], at: at(1))
        for key: UInt16 in [105, 115] { _ = client.recordReceived(sequence: key, at: at(2)) }
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(3)) == [
            .noted(.shortTransfer(received: 2, counted: 3)), .write([1, 3, 1, 101, 0]), .armTimer(at: at(30_003)),
        ])
        for key: UInt16 in [105, 110, 115] { _ = client.recordReceived(sequence: key, at: at(4)) }
        #expect(client.indicationReceived(bytes: [6, 0, 1, 1], at: at(5)).first
            == .commit(RecordCommit(keys: [105, 110, 115], cursor: RecordCursor(last: 115))))
    }

    @Test func aNewCGMSessionIsANewEpoch() {
        var device = SimulatedRecordDevice()
        device.keys = .timeOffset
        device.step = 5
        device.nextKey = 0
        device.measure(count: 12)
        var harness = RecordAccessHarness(device: device, configuration: RecordAccessConfiguration(keys: .timeOffset))
        harness.connect()
        harness.device.reset(numberingFrom: 0)
        harness.device.measure(count: 3)
        harness.connect()
        #expect(harness.cursor == RecordCursor(epoch: 1, last: 10, fence: 55))
        #expect(harness.missingReadings.isEmpty)
        #expect(harness.violations.isEmpty)
    }

    @Test func deletionNeedsAPermitForCommittedRecordsOfThisEpoch() throws {
        var client = RecordAccessClient(cursor: RecordCursor(epoch: 3, last: 0x0200))
        #expect(throws: RecordDeletionRefusal.permitForAnotherEpoch(permit: 2, cursor: 3)) {
            try client.deleteRecords(permit: RecordDeletionPermit(epoch: 2, acknowledgedThrough: 10), at: t0)
        }
        #expect(throws: RecordDeletionRefusal.beyondCommittedCursor(through: 0x0201, cursor: RecordCursor(epoch: 3, last: 0x0200))) {
            try client.deleteRecords(permit: RecordDeletionPermit(epoch: 3, acknowledgedThrough: 0x0201), at: t0)
        }
        let orders = try client.deleteRecords(permit: RecordDeletionPermit(epoch: 3, acknowledgedThrough: 0x0102), at: t0)
        #expect(orders.first == .write([2, 2, 1, 0x02, 0x01]))
        #expect(throws: RecordDeletionRefusal.procedureRunning) {
            try client.deleteRecords(permit: RecordDeletionPermit(epoch: 3, acknowledgedThrough: 1), at: t0)
        }
        #expect(client.indicationReceived(bytes: [6, 0, 2, 1], at: at(1)).last
            == .finished(.deleted(through: 0x0102, cursor: RecordCursor(epoch: 3, last: 0x0200))))
        _ = client.disconnected(at: at(2))
        #expect(throws: RecordDeletionRefusal.notConnected) {
            try client.deleteRecords(permit: RecordDeletionPermit(epoch: 3, acknowledgedThrough: 1), at: at(3))
        }
        var fenced = RecordAccessClient(cursor: RecordCursor(epoch: 1, last: 5, fence: 90))
        #expect(throws: RecordDeletionRefusal.fencedEpoch) {
            try fenced.deleteRecords(permit: RecordDeletionPermit(epoch: 1, acknowledgedThrough: 5), at: t0)
        }
    }

    /// Issue 14, item 2: cursors only move forward; a backward move is a typed error.
    @Test func aCursorNeverMovesBack() throws {
        let cursor = RecordCursor(epoch: 2, last: 50)
        #expect(throws: RecordCursor.MoveError.backward(from: cursor, to: RecordCursor(epoch: 2, last: 49))) {
            try cursor.advanced(to: RecordCursor(epoch: 2, last: 49))
        }
        #expect(throws: RecordCursor.MoveError.backward(from: cursor, to: RecordCursor(epoch: 2, last: nil))) {
            try cursor.advanced(to: RecordCursor(epoch: 2, last: nil))
        }
        #expect(throws: RecordCursor.MoveError.backward(from: cursor, to: RecordCursor(epoch: 1, last: 900))) {
            try cursor.advanced(to: RecordCursor(epoch: 1, last: 900))
        }
        #expect(try cursor.advanced(to: RecordCursor(epoch: 2, last: 50)) == RecordCursor(epoch: 2, last: 50))
        #expect(try cursor.advanced(to: RecordCursor(epoch: 3, last: nil, fence: 50)) == RecordCursor(epoch: 3, last: nil, fence: 50))
    }
}
