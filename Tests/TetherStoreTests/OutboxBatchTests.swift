import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Outbox in batches: set-based claim, one-transaction settle, transactions across services")
struct OutboxBatchTests {
    /// A file database (WAL, a writer and readers), `count` events of serial "S" queued behind its device.
    private func queued(_ count: Int, in directory: TemporaryDirectory) throws -> (GatewayDatabase, ConsumptionService) {
        let database = try GatewayDatabase(path: directory.file("gateway.sqlite"))
        let service = ConsumptionService(database: database)
        try store([.deviceInfo(deviceInfo("S"), negotiatedVersion: 1)] + (0..<count).map { .hit(hit("S", sequence: Int64($0))) }, in: service)
        return (database, service)
    }

    @Test("a claim takes the oldest ready commands in push order, one per entity, through the ready index")
    func claimOrder() throws {
        let directory = try TemporaryDirectory()
        let (database, _) = try queued(20, in: directory)
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 1)
        let first = try outbox.claim(limit: 8, now: simulationStart, using: &random)
        #expect(first.compactMap(\.command.seq) == first.compactMap(\.command.seq).sorted())
        #expect(first.first?.command.entityType == .device)
        #expect(!first.isEmpty)
        #expect(first.allSatisfy { $0.command.status == .inProgress && $0.command.attempts == 1 && $0.command.leaseToken == $0.token })
        #expect(first.allSatisfy { $0.command.firstAttemptAt == simulationStart.nanoseconds })
        let second = try outbox.claim(limit: 100, now: simulationStart, using: &random)
        #expect(second.count == 21 - 8)
        #expect(Set(first.map(\.command.id)).isDisjoint(with: second.map(\.command.id)))
        #expect((first.last?.command.seq ?? 0) < (second.first?.command.seq ?? 0))
        let plan = try database.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT seq FROM outboxCommand INDEXED BY outboxCommandReady WHERE status IN ('pending', 'failed') ORDER BY seq")
                .map { $0["detail"] as String? ?? "" }
        }
        #expect(plan.contains { $0.contains("outboxCommandReady") })
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "no sort: the index gives push order")
    }

    @Test("settling with leases that expired and were claimed again changes nothing; the new holder settles them")
    func settleLostLeases() throws {
        let directory = try TemporaryDirectory()
        let (database, service) = try queued(6, in: directory)
        var policy = OutboxPolicy()
        policy.leaseDuration = .seconds(30)
        let outbox = Outbox(database: database, policy: policy)
        var random = SplitMix64(seed: 2)
        let stale = try outbox.claim(limit: 10, now: simulationStart, using: &random)
        #expect(stale.count == 7)
        let later = simulationStart.advanced(by: .seconds(31))
        let live = try outbox.claim(limit: 10, now: later, using: &random)
        #expect(live.map(\.command.id) == stale.map(\.command.id))

        let refused = try outbox.settle(
            completing: Array(stale[0..<5]), failing: [OutboxFailure(stale[5], error: "server: 500"), OutboxFailure(stale[6], error: "rejected: no", kind: .rejected)],
            now: later, using: &random)
        #expect(refused.completed == 0)
        #expect(refused.lost == stale)
        #expect(refused.failed == [nil, nil])
        #expect(try outbox.counts().inProgress == 7)

        let accepted = try outbox.settle(completing: live, failing: [], now: later, using: &random)
        #expect(accepted.completed == 7 && accepted.lost.isEmpty)
        #expect(try outbox.counts().total == 0)
        #expect(try service.event(EventKey(serial: "S", bootCounter: 1, sequence: 5))?.syncedAt == later.nanoseconds)
    }

    @Test("completions, failures and a lost lease in one settle")
    func settleMixed() throws {
        let directory = try TemporaryDirectory()
        let (database, service) = try queued(5, in: directory)
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 3)
        let leases = try outbox.claim(limit: 10, now: simulationStart, using: &random)
        #expect(leases.count == 6)
        var forged = leases[5]
        forged.token = "not-the-token"
        let now = simulationStart.plus(milliseconds: 7)
        let settled = try outbox.settle(
            completing: [leases[0], leases[1], leases[2], forged],
            failing: [OutboxFailure(leases[3], error: "server: 500"), OutboxFailure(leases[4], error: "rejected: bad", kind: .rejected)],
            now: now, using: &random)
        #expect(settled.completed == 3)
        #expect(settled.lost == [forged])
        #expect(settled.failed == [.failed, .deadLetter])
        let counts = try outbox.counts()
        #expect(counts.inProgress == 1 && counts.failed == 1 && counts.deadLetter == 1 && counts.total == 3)
        let retry = try #require(try outbox.commands(status: .failed).first)
        #expect(retry.lastError == "server: 500")
        #expect(retry.nextAttemptAt > now.nanoseconds)
        #expect(retry.leaseToken == nil)
        // Completed events are synced; the others not.
        #expect(try service.event(EventKey(serial: "S", bootCounter: 1, sequence: 0))?.syncedAt == now.nanoseconds)
        #expect(try service.event(EventKey(serial: "S", bootCounter: 1, sequence: 3))?.syncedAt == nil)
        // The batch forms keep the single forms' answers.
        #expect(try outbox.complete([leases[5]], now: now).isEmpty)
        #expect(try outbox.complete([leases[5]], now: now) == [leases[5]])
        #expect(throws: StoreError(.leaseLost, "")) { try outbox.complete(leases[5], now: now) }
    }

    @Test("transaction: service calls inside join one transaction, see its writes, and roll back together")
    func transactionAcrossServices() throws {
        let directory = try TemporaryDirectory()
        let (database, service) = try queued(1, in: directory)
        let cursors = SyncCursors(database: database)
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 4)
        let leases = try outbox.claim(limit: 10, now: simulationStart, using: &random)

        struct Refused: Error {}
        #expect(throws: StoreError.self) {
            try database.transaction {
                try cursors.set("feed", to: "17", at: simulationStart)
                #expect(try cursors.value("feed") == "17", "a read inside sees the transaction's write")
                try outbox.complete(leases, now: simulationStart)
                throw Refused()
            }
        }
        #expect(try cursors.value("feed") == nil, "rolled back")
        #expect(try outbox.counts().inProgress == 2, "rolled back with it")

        try database.transaction {
            try outbox.complete(leases, now: simulationStart)
            // A nested transaction joins the outer one and leaves it open.
            try database.transaction { try cursors.set("inner", to: "1", at: simulationStart) }
            try cursors.set("feed", to: "18", at: simulationStart)
        }
        #expect(try cursors.value("inner") == "1")
        #expect(try cursors.value("feed") == "18")
        #expect(try outbox.counts().total == 0)
        #expect(try service.event(EventKey(serial: "S", bootCounter: 1, sequence: 0))?.syncedAt == simulationStart.nanoseconds)
    }
}
