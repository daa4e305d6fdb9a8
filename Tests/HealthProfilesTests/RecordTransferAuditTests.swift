import Testing
import TetherPrimitives
@testable import HealthProfiles

/// RecordTransfer rule 8: looking for records that vanished from the device, once per connection, after the first
/// complete procedure and after rule 7's deletion, by the client's rule 9 counts within ranges; records arriving
/// meanwhile and backfills wait for it; only when the device's policy asks.
@Suite struct RecordTransferAuditTests {
    typealias Transfer = RecordTransfer<String>
    let t0 = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    func at(_ ms: Int64) -> Timestamp { t0.advanced(by: .milliseconds(ms)) }

    // RACP bytes (GSS §3.178): Report Stored Records 0x01 (All 0x01; ≥ 0x03, filter 0x01, uint16); Report Number of
    // Stored Records 0x04 with "within range of" 0x04, filter 0x01 and two uint16 keys; Number of Stored Records
    // 0x05, 0x00, uint16; Response Code 0x06, 0x00, request op code, code (Success 0x01, Operator Not Supported 0x04).
    static let reportSuccess: [UInt8] = [6, 0, 1, 1]
    static let deleteSuccess: [UInt8] = [6, 0, 2, 1]
    static let countOperatorNotSupported: [UInt8] = [6, 0, 4, 4]
    static func number(_ count: UInt16) -> [UInt8] { [5, 0, UInt8(count & 0xFF), UInt8(count >> 8)] }

    /// The range of a "Report Number of Stored Records within range" write, or nil for any other write.
    static func countedRange(_ bytes: [UInt8]) -> ClosedRange<UInt16>? {
        guard bytes.count == 7, Array(bytes[0...2]) == [4, 4, 1] else { return nil }
        return (UInt16(bytes[3]) | UInt16(bytes[4]) << 8)...(UInt16(bytes[5]) | UInt16(bytes[6]) << 8)
    }

    func writes(_ orders: [Transfer.Order]) -> [[UInt8]] {
        orders.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    }

    func keyReads(_ orders: [Transfer.Order]) -> [UInt16] {
        orders.compactMap { if case .readRecordKeys(_, let through) = $0 { through } else { nil } }
    }

    func audits(_ orders: [Transfer.Order]) -> [RecordAuditEnd] {
        orders.compactMap { if case .auditFinished(_, let end) = $0 { end } else { nil } }
    }

    func finishes(_ orders: [Transfer.Order]) -> [RecordAccessOutcome] {
        orders.compactMap { if case .finished(let outcome) = $0 { outcome } else { nil } }
    }

    /// A first transfer of records 1…`count` (all records), stored durably; returns the orders after the store.
    func transferred(_ count: UInt16, audits: Bool = true, deletes: Bool = false) -> (Transfer, [Transfer.Order]) {
        var transfer = Transfer(
            configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: .start, deletesAcknowledgedRecords: deletes,
            auditsVanishedRecords: audits)
        #expect(writes(transfer.start(now: t0)) == [[1, 1]])
        for key in 1...count { _ = transfer.received("m\(key)", as: .records(keys: [key]), at: at(Int64(key))) }
        _ = transfer.indicationReceived(bytes: Self.reportSuccess, at: at(100))
        let orders = transfer.storeCompleted(durable: true, at: at(101))
        return (transfer, orders)
    }

    /// Answers every count the transfer writes as a device holding `held` would, until it writes something else;
    /// returns the ranges counted and the orders of the last answer.
    func answerCounts(_ transfer: inout Transfer, from orders: [Transfer.Order], held: Set<UInt16>, at start: Int64 = 200) -> ([ClosedRange<UInt16>], [Transfer.Order]) {
        var orders = orders
        var asked: [ClosedRange<UInt16>] = []
        var now = start
        while let bytes = writes(orders).last, let range = Self.countedRange(bytes), asked.count < 100 {
            asked.append(range)
            now += 1
            orders = transfer.indicationReceived(bytes: Self.number(UInt16(held.filter { range.contains($0) }.count)), at: at(now))
        }
        return (asked, orders)
    }

    @Test func withoutThePolicyNothingIsCounted() {
        let (_, orders) = transferred(4, audits: false)
        #expect(keyReads(orders).isEmpty && writes(orders).isEmpty && audits(orders).isEmpty)
    }

    /// After the complete procedure (its store durable) the keys are read up to the cursor; the search counts within
    /// ranges, each write a Report Number of Stored Records the device answers, and finds the one deleted from the
    /// middle. The cursor stays.
    @Test func aRecordDeletedFromTheMiddleIsFound() {
        var (transfer, orders) = transferred(8)
        #expect(finishes(orders) == [.complete(cursor: RecordCursor(epoch: 0, last: 8), counted: nil)])
        #expect(keyReads(orders) == [8])
        let first = transfer.recordKeysRead(Array(1...8), at: at(102))
        #expect(writes(first) == [[4, 4, 1, 1, 0, 8, 0]])
        #expect(transfer.isAuditing && transfer.isRunning)
        let (asked, last) = answerCounts(&transfer, from: first, held: Set(1...8).subtracting([7]))
        #expect(asked == [1...8, 1...4, 5...8, 5...6, 7...8, 7...7, 8...8])
        #expect(audits(last) == [.finding(.vanished([7]))])
        #expect(finishes(last).isEmpty, "an audit is not a transfer")
        #expect(!transfer.isAuditing && !transfer.isRunning)
        #expect(transfer.durableCursor == RecordCursor(epoch: 0, last: 8))
    }

    /// Only keys up to the committed cursor are counted, whatever the store answers.
    @Test func keysAboveTheCursorAreNotCounted() {
        var (transfer, _) = transferred(3)
        let orders = transfer.recordKeysRead([1, 2, 3, 9], at: at(102))
        #expect(writes(orders) == [[4, 4, 1, 1, 0, 3, 0]])
    }

    /// Once per connection: a catch-up that completes later asks nothing more.
    @Test func notRepeatedOnTheConnection() {
        var (transfer, orders) = transferred(3)
        let (_, ended) = answerCounts(&transfer, from: transfer.recordKeysRead(Array(1...3), at: at(102)), held: Set(1...3))
        #expect(keyReads(orders) == [3])
        #expect(audits(ended) == [.finding(.vanished([]))])
        let catchUp = transfer.received("m4 live", as: .records(keys: [4]), at: at(300))
        #expect(writes(catchUp) == [[1, 3, 1, 4, 0]])
        _ = transfer.received("m4", as: .records(keys: [4]), at: at(301))
        _ = transfer.indicationReceived(bytes: Self.reportSuccess, at: at(302))
        orders = transfer.storeCompleted(durable: true, at: at(303))
        #expect(finishes(orders) == [.complete(cursor: RecordCursor(epoch: 0, last: 4), counted: nil)])
        #expect(keyReads(orders).isEmpty && writes(orders).isEmpty)
    }

    /// A device without "within range" (the operator is optional): the audit stops with the refusal, nothing found.
    @Test func aDeviceThatCannotCountInARangeStopsTheAudit() {
        var (transfer, _) = transferred(3)
        _ = transfer.recordKeysRead(Array(1...3), at: at(102))
        let refused = transfer.indicationReceived(bytes: Self.countOperatorNotSupported, at: at(103))
        #expect(audits(refused) == [.stopped(.refused(.unsupported(.reportNumberOfStoredRecords, .operatorNotSupported), cursor: RecordCursor(epoch: 0, last: 3)))])
        #expect(!transfer.isRunning)
    }

    /// With the deletion policy too: the deletion first (its facts, its write, its end), then the audit.
    @Test func theDeletionComesFirst() {
        var (transfer, orders) = transferred(3, deletes: true)
        #expect(orders.contains { if case .readAcknowledgements = $0 { true } else { false } })
        #expect(keyReads(orders).isEmpty)
        let deleting = transfer.acknowledgementsRead(RecordAcknowledgements(epoch: 0, keys: [1: true, 2: true, 3: false]), at: at(102))
        #expect(writes(deleting) == [[2, 2, 1, 2, 0]])
        let deleted = transfer.indicationReceived(bytes: Self.deleteSuccess, at: at(103))
        #expect(keyReads(deleted) == [3])
        // The device holds 3 only now: 1 and 2 went from the bottom, by the gateway's own deletion.
        let (_, ended) = answerCounts(&transfer, from: transfer.recordKeysRead(Array(1...3), at: at(104)), held: [3])
        #expect(audits(ended) == [.finding(.vanished([]))])
    }

    /// A record arriving during a count is not fed to it; a catch-up takes it after the audit.
    @Test func aRecordDuringTheAuditIsReadAfterIt() {
        var (transfer, _) = transferred(3)
        let counting = transfer.recordKeysRead(Array(1...3), at: at(102))
        #expect(writes(counting) == [[4, 4, 1, 1, 0, 3, 0]])
        #expect(writes(transfer.received("m4 live", as: .records(keys: [4]), at: at(103))).isEmpty)
        let ended = transfer.indicationReceived(bytes: Self.number(3), at: at(104))
        #expect(audits(ended) == [.finding(.vanished([]))])
        #expect(writes(ended) == [[1, 3, 1, 4, 0]], "the catch-up from the cursor")
    }

    /// A backfill asked during the audit starts when it ends (rule 6).
    @Test func aBackfillDuringTheAuditRunsAfterIt() {
        var (transfer, _) = transferred(3)
        _ = transfer.recordKeysRead(Array(1...3), at: at(102))
        #expect(transfer.backfillRequested(now: at(103)).isEmpty)
        let ended = transfer.indicationReceived(bytes: Self.number(3), at: at(104))
        #expect(writes(ended) == [[1, 3, 1, 4, 0]])
        #expect(transfer.procedures == 2)
    }

    /// A meter that answers an empty range with No Records Found instead of a count of 0: the same as 0.
    @Test func noRecordsFoundIsACountOfZero() {
        var (transfer, _) = transferred(3)
        #expect(writes(transfer.recordKeysRead(Array(1...3), at: at(102))) == [[4, 4, 1, 1, 0, 3, 0]])
        #expect(writes(transfer.indicationReceived(bytes: Self.number(2), at: at(103))) == [[4, 4, 1, 1, 0, 2, 0]])
        #expect(writes(transfer.indicationReceived(bytes: Self.number(2), at: at(104))) == [[4, 4, 1, 3, 0, 3, 0]])
        let ended = transfer.indicationReceived(bytes: [6, 0, 4, 6], at: at(105))
        #expect(audits(ended) == [.finding(.vanished([3]))])
    }

    /// A record arriving while the latest record is being compared (client rule 4) is taken by a catch-up once the
    /// procedure ends, not left for the next connection.
    @Test func aRecordDuringTheComparisonIsTakenAfterIt() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(epoch: 0, last: 40))
        #expect(writes(transfer.start(now: t0)) == [[1, 3, 1, 41, 0]])
        #expect(writes(transfer.indicationReceived(bytes: [6, 0, 1, 6], at: at(1))) == [[1, 6]])
        _ = transfer.received("m38", as: .records(keys: [38]), at: at(2))
        let comparing = transfer.indicationReceived(bytes: Self.reportSuccess, at: at(3))
        #expect(comparing.contains { if case .compareLatestRecord(0, 38, "m38") = $0 { true } else { false } })
        #expect(writes(transfer.received("m41 live", as: .records(keys: [41]), at: at(4))).isEmpty)
        let ended = transfer.latestCompared(true, at: at(5))
        #expect(finishes(ended) == [.complete(cursor: RecordCursor(epoch: 0, last: 40), counted: nil)])
        #expect(writes(ended) == [[1, 3, 1, 41, 0]], "the catch-up from the cursor")
    }

    @Test func unreadableKeysFindNothing() {
        var (transfer, _) = transferred(3)
        let orders = transfer.recordKeysRead(nil, at: at(102))
        #expect(audits(orders) == [.keysUnreadable])
        #expect(writes(orders).isEmpty)
    }

    @Test func aDropDuringACountStopsTheAudit() {
        var (transfer, _) = transferred(3)
        _ = transfer.recordKeysRead(Array(1...3), at: at(102))
        let dropped = transfer.disconnected(at: at(103))
        #expect(audits(dropped) == [.stopped(.interrupted(.disconnected, cursor: RecordCursor(epoch: 0, last: 3)))])
    }

    /// A CGM's time offsets cannot show a missing record: the audit does not run.
    @Test func timeOffsetKeysAreNotAudited() {
        var transfer = Transfer(
            configuration: RecordAccessConfiguration(keys: .timeOffset, asksForCountFirst: false), cursor: RecordCursor(epoch: 0, last: 10),
            auditsVanishedRecords: true)
        #expect(writes(transfer.start(now: t0)) == [[1, 3, 1, 11, 0]])
        // Nothing after the cursor: the probe (the last record) says the device's latest is still 10.
        #expect(writes(transfer.indicationReceived(bytes: Self.reportSuccess, at: at(10))) == [[1, 6]])
        _ = transfer.received("c10", as: .records(keys: [10]), at: at(11))
        let orders = transfer.indicationReceived(bytes: Self.reportSuccess, at: at(12))
        #expect(finishes(orders) == [.complete(cursor: RecordCursor(epoch: 0, last: 10), counted: nil)])
        #expect(audits(orders) == [.notApplicable])
        #expect(keyReads(orders).isEmpty && writes(orders).isEmpty)
    }
}
