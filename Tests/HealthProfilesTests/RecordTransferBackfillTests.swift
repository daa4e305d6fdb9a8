import Testing
import TetherPrimitives
@testable import HealthProfiles

/// RecordTransfer rule 6: a technician's backfill (control API `Backfill`) starts a procedure from the committed
/// cursor after any ending, and nothing while one runs or when the connection cannot run one. RACP bytes as in
/// RecordTransferTests (GSS §3.178): Report Stored Records 0x01 with operator ≥ 0x03, filter 0x01 (sequence), key.
@Suite struct RecordTransferBackfillTests {
    typealias Transfer = RecordTransfer<String>
    let t0 = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    func at(_ ms: Int64) -> Timestamp { t0.advanced(by: .milliseconds(ms)) }
    static let success: [UInt8] = [6, 0, 1, 1]

    func writes(_ orders: [Transfer.Order]) -> [[UInt8]] {
        orders.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    }

    /// A transfer that stored record 1 and completed.
    func completed() -> Transfer {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: .start)
        _ = transfer.start(now: t0)
        _ = transfer.received("m1", as: .records(keys: [1]), at: at(1))
        _ = transfer.indicationReceived(bytes: Self.success, at: at(2))
        _ = transfer.storeCompleted(durable: true, at: at(3))
        return transfer
    }

    @Test func afterACompleteProcedureABackfillAsksFromTheCursor() {
        var transfer = completed()
        #expect(!transfer.isRunning)
        #expect(writes(transfer.backfillRequested(now: at(10))) == [[1, 3, 1, 2, 0]], "report stored records ≥ 2")
        #expect(transfer.isRunning)
        #expect(transfer.procedures == 2)
    }

    /// Unlike rule 4's catch-up, a person's request is honoured after an interrupted procedure: it cannot loop.
    @Test func afterAnInterruptedProcedureABackfillStillRuns() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false, retryLimit: 0), cursor: RecordCursor(epoch: 0, last: 4))
        _ = transfer.start(now: t0)
        _ = transfer.indicationReceived(bytes: [6, 0, 1, 0x0A], at: at(1))  // Server Busy, no retries
        #expect(!transfer.isRunning)
        #expect(writes(transfer.backfillRequested(now: at(2))) == [[1, 3, 1, 5, 0]])
        #expect(transfer.procedures == 2)
    }

    @Test func whileAProcedureRunsABackfillStartsNothing() {
        var transfer = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: .start)
        _ = transfer.start(now: t0)
        #expect(transfer.backfillRequested(now: at(1)).isEmpty)
        #expect(transfer.isRunning, "the running procedure answers the request")
        #expect(transfer.procedures == 1)
    }

    @Test func afterAFailedStoreOrADisconnectABackfillStartsNothing() {
        var failed = Transfer(configuration: RecordAccessConfiguration(asksForCountFirst: false), cursor: .start)
        _ = failed.start(now: t0)
        _ = failed.received("m1", as: .records(keys: [1]), at: at(1))
        _ = failed.indicationReceived(bytes: Self.success, at: at(2))
        _ = failed.storeCompleted(durable: false, at: at(3))
        #expect(failed.backfillRequested(now: at(4)).isEmpty)
        #expect(!failed.isRunning)

        var disconnected = completed()
        _ = disconnected.disconnected(at: at(5))
        #expect(disconnected.backfillRequested(now: at(6)).isEmpty)
        #expect(!disconnected.isRunning)
    }
}
