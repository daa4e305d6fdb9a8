import Testing
import TetherPrimitives
@testable import HealthProfiles

/// RecordTransfer rule 7: deleting records the backend acknowledged, between procedures, after a complete one, only
/// when the device's policy allows it; the deletion's end is not a transfer's, moves no cursor, and a device that
/// refuses is not asked again on the connection.
@Suite struct RecordTransferDeletionTests {
    typealias Transfer = RecordTransfer<String>
    let t0 = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    func at(_ ms: Int64) -> Timestamp { t0.advanced(by: .milliseconds(ms)) }

    // RACP bytes (GSS §3.178): Report Stored Records 0x01 (All 0x01; ≥ 0x03 with filter 0x01 and a uint16 key),
    // Delete Stored Records 0x02 with operator ≤ 0x02, filter type 0x01 (sequence number); Response Code 0x06,
    // 0x00, request op code, code (Success 0x01, Op Code Not Supported 0x02).
    static let reportSuccess: [UInt8] = [6, 0, 1, 1]
    static let deleteSuccess: [UInt8] = [6, 0, 2, 1]
    static let deleteNotSupported: [UInt8] = [6, 0, 2, 2]
    static func delete(through key: UInt8) -> [UInt8] { [2, 2, 1, key, 0] }

    func writes(_ orders: [Transfer.Order]) -> [[UInt8]] {
        orders.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    }

    func reads(_ orders: [Transfer.Order]) -> [UInt16] {
        orders.compactMap { if case .readAcknowledgements(_, let through) = $0 { through } else { nil } }
    }

    func deletionEndings(_ orders: [Transfer.Order]) -> [RecordAccessOutcome] {
        orders.compactMap { if case .deletionFinished(let outcome, _) = $0 { outcome } else { nil } }
    }

    func declines(_ orders: [Transfer.Order]) -> [RecordDeletionRule.Decline] {
        orders.compactMap { if case .deletionDeclined(let why) = $0 { why } else { nil } }
    }

    func finishes(_ orders: [Transfer.Order]) -> [RecordAccessOutcome] {
        orders.compactMap { if case .finished(let outcome) = $0 { outcome } else { nil } }
    }

    /// A first transfer of records 1…`count` (all records), stored durably; returns the orders after the store.
    func transferred(_ count: UInt16, deletes: Bool = true) -> (Transfer, [Transfer.Order]) {
        var transfer = Transfer(
            configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: .start, deletesAcknowledgedRecords: deletes)
        #expect(writes(transfer.start(now: t0)) == [[1, 1]])
        for key in 1...count { _ = transfer.received("m\(key)", as: .records(keys: [key]), at: at(Int64(key))) }
        _ = transfer.indicationReceived(bytes: Self.reportSuccess, at: at(100))
        let orders = transfer.storeCompleted(durable: true, at: at(101))
        return (transfer, orders)
    }

    static func acknowledged(_ keys: ClosedRange<UInt16>, pending: [UInt16] = []) -> RecordAcknowledgements {
        var facts = RecordAcknowledgements(epoch: 0, keys: [:])
        for key in keys { facts.keys[key] = true }
        for key in pending { facts.keys[key] = false }
        return facts
    }

    /// Without the policy, a complete procedure asks for nothing more.
    @Test func withoutThePolicyNothingIsAskedOrDeleted() {
        let (transfer, orders) = transferred(3, deletes: false)
        #expect(finishes(orders) == [.complete(cursor: RecordCursor(epoch: 0, last: 3), counted: nil)])
        #expect(reads(orders).isEmpty && writes(orders).isEmpty)
        #expect(!transfer.isRunning)
    }

    /// With it: after the complete procedure (and only after its store is durable) the facts are read up to the
    /// cursor; the permit (1…2 acknowledged, 3 pending) deletes ≤ 2; the deletion's end moves no cursor and is not
    /// a transfer's `.finished`.
    @Test func aCompleteProcedureReadsTheFactsAndDeletesUpToThePermit() {
        let (first, orders) = transferred(3)
        var transfer = first
        #expect(reads(orders) == [3])
        #expect(transfer.isRunning == false)
        let deleting = transfer.acknowledgementsRead(Self.acknowledged(1...2, pending: [3]), at: at(102))
        #expect(writes(deleting) == [Self.delete(through: 2)])
        #expect(transfer.isDeleting && transfer.isRunning)
        let ended = transfer.indicationReceived(bytes: Self.deleteSuccess, at: at(103))
        #expect(deletionEndings(ended) == [.deleted(through: 2, cursor: RecordCursor(epoch: 0, last: 3))])
        #expect(finishes(ended).isEmpty, "a deletion is not a transfer: the time-write gate and backfills do not hear of it")
        #expect(writes(ended).isEmpty && reads(ended).isEmpty)
        #expect(transfer.durableCursor == RecordCursor(epoch: 0, last: 3), "the cursor stays")
        #expect(transfer.deleted == RecordDeletionPermit(epoch: 0, acknowledgedThrough: 2))
        #expect(!transfer.isDeleting)
    }

    /// Nothing acknowledged: declined, nothing written.
    @Test func nothingAcknowledgedDeletesNothing() {
        var (transfer, _) = transferred(3)
        let orders = transfer.acknowledgementsRead(RecordAcknowledgements(epoch: 0, keys: [1: false, 2: true, 3: true]), at: at(102))
        #expect(writes(orders).isEmpty)
        #expect(declines(orders) == [.nothingAcknowledged(firstUnacknowledged: 1)])
        #expect(transfer.acknowledgementsRead(nil, at: at(103)).isEmpty, "one answer per read")
    }

    /// Facts the store could not read delete nothing.
    @Test func unreadableFactsDeleteNothing() {
        var (transfer, _) = transferred(3)
        let orders = transfer.acknowledgementsRead(nil, at: at(102))
        #expect(writes(orders).isEmpty)
        #expect(declines(orders) == [.acknowledgementsUnreadable])
    }

    /// A record arriving during the deletion is not fed to it; when it ends, a catch-up takes it "≥ cursor + 1",
    /// and after that complete procedure the facts are read again: the same permit is not deleted twice.
    @Test func aRecordTakenDuringTheDeletionIsReadAfterItAndNothingIsDeletedTwice() {
        var (transfer, _) = transferred(3)
        _ = transfer.acknowledgementsRead(Self.acknowledged(1...3), at: at(102))
        let during = transfer.received("m4 live", as: .records(keys: [4]), at: at(103))
        #expect(writes(during).isEmpty, "nothing written while the deletion runs")
        let ended = transfer.indicationReceived(bytes: Self.deleteSuccess, at: at(104))
        #expect(deletionEndings(ended) == [.deleted(through: 3, cursor: RecordCursor(epoch: 0, last: 3))])
        #expect(writes(ended) == [[1, 3, 1, 4, 0]], "the catch-up from the cursor, which stayed at 3")
        _ = transfer.received("m4", as: .records(keys: [4]), at: at(105))
        _ = transfer.indicationReceived(bytes: Self.reportSuccess, at: at(106))
        let stored = transfer.storeCompleted(durable: true, at: at(107))
        #expect(transfer.durableCursor == RecordCursor(epoch: 0, last: 4))
        #expect(reads(stored) == [4])
        // The store still says only 1…3 are acknowledged (4 is pending): the permit is 3, already deleted.
        let again = transfer.acknowledgementsRead(Self.acknowledged(1...3, pending: [4]), at: at(108))
        #expect(writes(again).isEmpty)
        #expect(declines(again) == [.alreadyDeleted(through: 3)])
    }

    /// A device that answers Op Code Not Supported is remembered for the connection: not asked again after the
    /// next complete procedure.
    @Test func aDeviceThatCannotDeleteIsNotAskedAgainOnTheConnection() {
        var (transfer, _) = transferred(3)
        _ = transfer.acknowledgementsRead(Self.acknowledged(1...3), at: at(102))
        let refused = transfer.indicationReceived(bytes: Self.deleteNotSupported, at: at(103))
        #expect(deletionEndings(refused) == [.refused(.unsupported(.deleteStoredRecords, .opCodeNotSupported), cursor: RecordCursor(epoch: 0, last: 3))])
        // A live record: a catch-up, complete, and no read of the facts after it.
        let catchUp = transfer.received("m4 live", as: .records(keys: [4]), at: at(104))
        #expect(writes(catchUp) == [[1, 3, 1, 4, 0]])
        _ = transfer.received("m4", as: .records(keys: [4]), at: at(105))
        _ = transfer.indicationReceived(bytes: Self.reportSuccess, at: at(106))
        let stored = transfer.storeCompleted(durable: true, at: at(107))
        #expect(finishes(stored) == [.complete(cursor: RecordCursor(epoch: 0, last: 4), counted: nil)])
        #expect(reads(stored).isEmpty && writes(stored).isEmpty)
    }

    /// A backfill asked while the deletion runs starts its procedure when the deletion ends (rule 6).
    @Test func aBackfillDuringTheDeletionRunsAfterIt() {
        var (transfer, _) = transferred(3)
        _ = transfer.acknowledgementsRead(Self.acknowledged(1...3), at: at(102))
        #expect(transfer.backfillRequested(now: at(103)).isEmpty)
        #expect(transfer.isRunning, "the driver keeps the backfill waiting for the next procedure's end")
        let ended = transfer.indicationReceived(bytes: Self.deleteSuccess, at: at(104))
        #expect(writes(ended) == [[1, 3, 1, 4, 0]])
        #expect(transfer.procedures == 2)
    }

    /// The link dropping during the deletion ends it interrupted; the cursor stays.
    @Test func aDropDuringTheDeletionEndsItInterrupted() {
        var (transfer, _) = transferred(3)
        _ = transfer.acknowledgementsRead(Self.acknowledged(1...3), at: at(102))
        let dropped = transfer.disconnected(at: at(103))
        #expect(deletionEndings(dropped) == [.interrupted(.disconnected, cursor: RecordCursor(epoch: 0, last: 3))])
        #expect(transfer.durableCursor == RecordCursor(epoch: 0, last: 3))
        #expect(transfer.deleted == nil)
    }
}
