import Testing
import TetherPrimitives
@testable import HealthProfiles

/// The cold lane's sans-I/O core (RecordTransfer.swift), rule by rule: what it stores, with which values, and
/// that nothing after a store happens before the store is durable. Values are strings naming what arrived.
@Suite struct RecordTransferTests {
    typealias Transfer = RecordTransfer<String>
    let t0 = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    func at(_ ms: Int64) -> Timestamp { t0.advanced(by: .milliseconds(ms)) }

    // RACP bytes (GSS §3.178): Number of Stored Records response (0x05, 0x00, uint16), Response Code (0x06, 0x00,
    // request op code, code); Report Stored Records 0x01 with operator All (0x01) or ≥ (0x03, filter 0x01, key).
    static let success: [UInt8] = [6, 0, 1, 1]
    static func count(_ n: UInt8) -> [UInt8] { [5, 0, n, 0] }

    func writes(_ orders: [Transfer.Order]) -> [[UInt8]] {
        orders.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    }

    func stores(_ orders: [Transfer.Order]) -> [Transfer.StoreBatch] {
        orders.compactMap { if case .store(let batch) = $0 { batch } else { nil } }
    }

    func finished(_ orders: [Transfer.Order]) -> RecordAccessOutcome? {
        orders.lazy.compactMap { if case .finished(let outcome) = $0 { outcome } else { nil } }.first
    }

    /// Rule 2: the commit becomes one store of exactly the received values (measurement with its context), and the
    /// end of the procedure is held back until the store is durable.
    @Test func aCommitIsOneStoreAndNothingFollowsItUntilItIsDurable() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(), cursor: .start)
        #expect(writes(transfer.start(now: t0)) == [[4, 1]])
        #expect(writes(transfer.indicationReceived(bytes: Self.count(2), at: at(1))) == [[1, 1]])
        _ = transfer.received("m1", as: .records(keys: [1]), at: at(2))
        _ = transfer.received("c1", as: .companion(of: 1), at: at(3))
        _ = transfer.received("m2", as: .records(keys: [2]), at: at(4))
        let orders = transfer.indicationReceived(bytes: Self.success, at: at(5))
        let batch = try! #require(stores(orders).first)
        #expect(batch.cursor == RecordCursor(epoch: 0, last: 2))
        #expect(batch.records.map(\.key) == [1, 2])
        #expect(batch.records.map(\.record) == ["m1", "m2"])
        #expect(batch.records.map(\.companions) == [["c1"], []])
        #expect(finished(orders) == nil, "the procedure is not over before the store is durable")
        #expect(transfer.isRunning)
        let after = transfer.storeCompleted(durable: true, at: at(6))
        #expect(finished(after) == .complete(cursor: RecordCursor(epoch: 0, last: 2), counted: 2))
        #expect(transfer.durableCursor == RecordCursor(epoch: 0, last: 2))
    }

    /// Rule 2: a store that fails ends the procedure with nothing more written, and the gap's next request is
    /// never sent.
    @Test func aFailedStoreAbandonsTheConnectionAndHoldsTheNextRequestBack() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(epoch: 0, last: 4))
        #expect(writes(transfer.start(now: t0)) == [[1, 3, 1, 5, 0]])
        _ = transfer.received("m5", as: .records(keys: [5]), at: at(1))
        _ = transfer.received("m7", as: .records(keys: [7]), at: at(2))  // 6 lost in transit: a gap
        let orders = transfer.indicationReceived(bytes: Self.success, at: at(3))
        #expect(stores(orders).map(\.cursor) == [RecordCursor(epoch: 0, last: 5)])
        #expect(writes(orders).isEmpty, "the request for the rest waits for the store")
        let failed = transfer.storeCompleted(durable: false, at: at(4))
        #expect(writes(failed).isEmpty)
        #expect(failed.contains { if case .abandoned(cursor: RecordCursor(epoch: 0, last: 4)) = $0 { true } else { false } })
        #expect(transfer.received("m8", as: .records(keys: [8]), at: at(5)).isEmpty)
        #expect(transfer.indicationReceived(bytes: Self.success, at: at(6)).isEmpty)
    }

    /// Rule 2: once durable, the held request goes out (≥ 6 after the gap).
    @Test func aDurableStoreReleasesTheHeldRequest() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: RecordCursor(epoch: 0, last: 4))
        _ = transfer.start(now: t0)
        _ = transfer.received("m5", as: .records(keys: [5]), at: at(1))
        _ = transfer.received("m7", as: .records(keys: [7]), at: at(2))
        _ = transfer.indicationReceived(bytes: Self.success, at: at(3))
        #expect(writes(transfer.storeCompleted(durable: true, at: at(4))) == [[1, 3, 1, 6, 0]])
        // The new request's answer: the earlier answer's values are gone (rule 1); 7 arrives again.
        _ = transfer.received("m6", as: .records(keys: [6]), at: at(5))
        _ = transfer.received("m7'", as: .records(keys: [7]), at: at(6))
        let batch = try! #require(stores(transfer.indicationReceived(bytes: Self.success, at: at(7))).first)
        #expect(batch.records.map(\.record) == ["m6", "m7'"])
    }

    /// Rule 3: a context that arrives after its measurement was stored is stored alone, beside the remembered
    /// measurement, with no cursor.
    @Test func aLateCompanionIsStoredAloneWithItsRecord() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: .start)
        _ = transfer.start(now: t0)
        _ = transfer.received("m1", as: .records(keys: [1]), at: at(1))
        _ = transfer.indicationReceived(bytes: Self.success, at: at(2))
        _ = transfer.storeCompleted(durable: true, at: at(3))
        let late = stores(transfer.received("c1", as: .companion(of: 1), at: at(4)))
        #expect(late.count == 1)
        #expect(late.first?.cursor == nil)
        #expect(late.first?.records.first?.recordAlreadyStored == true)
        #expect(late.first?.records.first?.record == "m1")
        #expect(late.first?.records.first?.companions == ["c1"])
    }

    /// Rule 4: a record outside a procedure, after a complete one, starts another from the committed cursor; it
    /// is not stored from where it arrived.
    @Test func aRecordOutsideAProcedureStartsACatchUpFromTheCursor() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: .start)
        _ = transfer.start(now: t0)
        _ = transfer.received("m1", as: .records(keys: [1]), at: at(1))
        _ = transfer.indicationReceived(bytes: Self.success, at: at(2))
        _ = transfer.storeCompleted(durable: true, at: at(3))
        let orders = transfer.received("m2 live", as: .records(keys: [2]), at: at(4))
        #expect(stores(orders).isEmpty)
        #expect(writes(orders) == [[1, 3, 1, 2, 0]])
        #expect(transfer.procedures == 2)
    }

    /// Rule 4: never after an interrupted procedure.
    @Test func noCatchUpAfterAnInterruptedProcedure() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false, retryLimit: 0), cursor: .start)
        _ = transfer.start(now: t0)
        #expect(finished(transfer.indicationReceived(bytes: [6, 0, 1, 0x0A], at: at(1))) == .interrupted(.serverBusy, cursor: .start))
        #expect(writes(transfer.received("m1", as: .records(keys: [1]), at: at(2))).isEmpty)
        #expect(transfer.procedures == 1)
    }
}
