import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Outbox: coalescing, order, leases, backoff, dead letters")
struct OutboxTests {
    typealias Operation = OutboxCommandRecord.Operation

    /// The device entity of serial "D" with one command per operation, enqueued at successive instants.
    private func enqueue(_ operations: [Operation], in database: GatewayDatabase, entity: OutboxEntity = .device(serial: "D")) throws -> [OutboxCommandRecord] {
        var random = SplitMix64(seed: 1)
        for (index, operation) in operations.enumerated() {
            let now = simulationStart.plus(milliseconds: Int64(index))
            let id = UUIDv7.make(at: now, using: &random)
            try database.write { db in
                try Outbox.enqueue(db, entity: entity, operation: operation, payload: #"{"step":\#(index)}"#, now: now, id: id)
            }
        }
        return try Outbox(database: database).commands(for: entity)
    }

    struct CoalescingCase: CustomTestStringConvertible, Sendable {
        var operations: [Operation]
        /// What remains queued: operation and the payload step it carries.
        var expected: [(Operation, Int)]
        var testDescription: String { operations.map(\.rawValue).joined(separator: "+") }
    }

    @Test("coalescing table: a never-sent command absorbs the next one", arguments: [
        CoalescingCase(operations: [.create, .update], expected: [(.create, 1)]),
        CoalescingCase(operations: [.create, .delete], expected: []),
        CoalescingCase(operations: [.update, .update], expected: [(.update, 1)]),
        CoalescingCase(operations: [.update, .delete], expected: [(.delete, 1)]),
        CoalescingCase(operations: [.create, .update, .update], expected: [(.create, 2)]),
        CoalescingCase(operations: [.create, .update, .delete], expected: []),
        CoalescingCase(operations: [.delete, .delete], expected: [(.delete, 1)]),
        CoalescingCase(operations: [.delete, .create], expected: [(.delete, 0), (.create, 1)]),
        CoalescingCase(operations: [.create, .delete, .create], expected: [(.create, 2)]),
    ])
    func coalescing(_ testCase: CoalescingCase) throws {
        let database = try GatewayDatabase.inMemory()
        let commands = try enqueue(testCase.operations, in: database)
        #expect(commands.map(\.operation) == testCase.expected.map(\.0))
        #expect(commands.map(\.payload) == testCase.expected.map { #"{"step":\#($0.1)}"# })
    }

    @Test("impossible sequences are refused", arguments: [[Operation.create, .create], [.update, .create], [.delete, .update]])
    func impossibleSequences(_ operations: [Operation]) throws {
        let database = try GatewayDatabase.inMemory()
        #expect(throws: StoreError(.invalidRequest, "")) { try enqueue(operations, in: database) }
        // The refused command left nothing behind; the first one is still there.
        #expect(try Outbox(database: database).commands(for: .device(serial: "D")).count == 1)
    }

    @Test("a command that has left the gateway is never rewritten: later changes queue behind it")
    func sentCommandsAreNotCoalesced() throws {
        let database = try GatewayDatabase.inMemory()
        let outbox = Outbox(database: database)
        _ = try enqueue([.create], in: database)
        var random = SplitMix64(seed: 2)
        let lease = try #require(try outbox.claim(limit: 10, now: simulationStart.plus(milliseconds: 10), using: &random).first)
        try outbox.fail(lease, error: "timeout", now: simulationStart.plus(milliseconds: 11), using: &random)
        try database.write { db in
            try Outbox.enqueue(db, entity: .device(serial: "D"), operation: .update, payload: #"{"step":9}"#, now: simulationStart.plus(milliseconds: 12), id: UUIDv7.make(at: simulationStart, using: &random))
            try Outbox.enqueue(db, entity: .device(serial: "D"), operation: .delete, payload: #"{"step":10}"#, now: simulationStart.plus(milliseconds: 13), id: UUIDv7.make(at: simulationStart, using: &random))
        }
        let commands = try outbox.commands(for: .device(serial: "D"))
        #expect(commands.map(\.operation) == [.create, .delete])  // the update folded into the delete, not into the sent create
        #expect(commands[0].payload == #"{"step":0}"#)
        #expect(commands[0].status == .failed)
    }

    @Test("commands of one entity are claimed strictly in order; entities do not block each other")
    func orderPerEntity() throws {
        let database = try GatewayDatabase.inMemory()
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 3)
        try database.write { db in
            for (index, (entity, operation)) in [
                (OutboxEntity.device(serial: "A"), Operation.create), (.device(serial: "B"), .create),
                (.deviceSettings(serial: "A"), .update), (.device(serial: "A"), .delete),
            ].enumerated() {
                let now = simulationStart.plus(milliseconds: Int64(index))
                try Outbox.enqueue(db, entity: entity, operation: operation, payload: "{}", now: now, id: UUIDv7.make(at: now, using: &random))
            }
        }
        // Device A was created and deleted before anything was sent: the backend never hears of it.
        #expect(try outbox.commands(for: .device(serial: "A")).isEmpty)

        try database.write { db in
            let now = simulationStart.plus(milliseconds: 10)
            try Outbox.enqueue(db, entity: .device(serial: "C"), operation: .create, payload: "{}", now: now, id: UUIDv7.make(at: now, using: &random))
        }
        let first = try outbox.claim(limit: 10, now: simulationStart.plus(milliseconds: 20), using: &random)
        #expect(first.map(\.command.entity) == [.device(serial: "B"), .deviceSettings(serial: "A"), .device(serial: "C")])
        // C's create is leased; its update must wait for it even though it is ready.
        try database.write { db in
            let now = simulationStart.plus(milliseconds: 21)
            try Outbox.enqueue(db, entity: .device(serial: "C"), operation: .update, payload: #"{"v":2}"#, now: now, id: UUIDv7.make(at: now, using: &random))
        }
        #expect(try outbox.claim(limit: 10, now: simulationStart.plus(milliseconds: 22), using: &random).isEmpty)
        let create = try #require(first.first { $0.command.entityId == "C" })
        try outbox.complete(create, now: simulationStart.plus(milliseconds: 23))
        let next = try outbox.claim(limit: 10, now: simulationStart.plus(milliseconds: 24), using: &random)
        #expect(next.map(\.command.operation) == [.update])
        #expect(next.map(\.command.payload) == [#"{"v":2}"#])
    }

    @Test("a pusher that dies mid-push loses its lease; the command returns to pending and is claimed again")
    func leaseExpiry() throws {
        let database = try GatewayDatabase.inMemory()
        var policy = OutboxPolicy()
        policy.leaseDuration = .seconds(30)
        let outbox = Outbox(database: database, policy: policy)
        _ = try enqueue([.create], in: database)
        var random = SplitMix64(seed: 4)
        let lease = try #require(try outbox.claim(limit: 1, now: simulationStart, using: &random).first)
        #expect(lease.command.attempts == 1)
        #expect(try outbox.counts().inProgress == 1)

        // The pusher crashed. Before the lease ends nobody else may take the command.
        #expect(try outbox.claim(limit: 1, now: simulationStart.advanced(by: .seconds(29)), using: &random).isEmpty)
        #expect(try outbox.releaseExpiredLeases(now: simulationStart.advanced(by: .seconds(30))) == 1)
        let released = try #require(try outbox.commands(for: .device(serial: "D")).first)
        #expect(released.status == .pending)
        #expect(released.lastError == "lease expired before the push completed")

        let again = try #require(try outbox.claim(limit: 1, now: simulationStart.advanced(by: .seconds(31)), using: &random).first)
        #expect(again.command.id == lease.command.id)  // the same idempotency key: the backend dedups a double push
        #expect(again.command.attempts == 2)
        #expect(again.token != lease.token)
        // The dead pusher's late report is refused; the live one completes.
        #expect(throws: StoreError(.leaseLost, "")) { try outbox.complete(lease, now: simulationStart.advanced(by: .seconds(32))) }
        try outbox.complete(again, now: simulationStart.advanced(by: .seconds(33)))
        #expect(try outbox.counts().total == 0)
    }

    @Test("transient failures back off exponentially with full jitter, then dead-letter with the last error")
    func backoffAndDeadLetter() throws {
        let database = try GatewayDatabase.inMemory()
        var policy = OutboxPolicy()
        policy.maximumAttempts = 4
        policy.backoffBase = .seconds(2)
        policy.backoffCap = .seconds(5)
        let outbox = Outbox(database: database, policy: policy)
        _ = try enqueue([.create], in: database)
        var random = SplitMix64(seed: 5)
        var now = simulationStart
        for attempt in 1...4 {
            let lease = try #require(try outbox.claim(limit: 1, now: now, using: &random).first, "attempt \(attempt)")
            #expect(lease.command.attempts == attempt)
            let status = try outbox.fail(lease, error: "HTTP 503 (attempt \(attempt))", now: now, using: &random)
            let command = try #require(try outbox.commands(for: .device(serial: "D")).first)
            if attempt < 4 {
                #expect(status == .failed)
                let delay = Timestamp(nanoseconds: command.nextAttemptAt).nanoseconds - now.nanoseconds
                let ceiling = min(Duration.seconds(5), .seconds(2) * (1 << (attempt - 1))).nanoseconds
                #expect((0...ceiling).contains(delay))
                // Not claimable before its time; claimable at it.
                if delay > 0 {
                    #expect(try outbox.claim(limit: 1, now: Timestamp(nanoseconds: command.nextAttemptAt - 1), using: &random).isEmpty)
                }
                now = Timestamp(nanoseconds: command.nextAttemptAt)
            } else {
                #expect(status == .deadLetter)
                #expect(command.lastError == "HTTP 503 (attempt 4)")
            }
        }
        #expect(try outbox.counts().deadLetter == 1)
        #expect(try outbox.claim(limit: 1, now: now.advanced(by: .seconds(3600)), using: &random).isEmpty)

        // An operator retries it by id: a fresh budget, claimable at once.
        let dead = try #require(try outbox.commands(status: .deadLetter).first)
        try outbox.retry(id: dead.id, now: now)
        let retried = try #require(try outbox.claim(limit: 1, now: now, using: &random).first)
        #expect(retried.command.attempts == 1)
        #expect(retried.command.firstAttemptAt != nil)  // still never coalesced: the backend saw this id
        try outbox.fail(retried, error: "rejected: 422", kind: .rejected, now: now, using: &random)
        #expect(try outbox.counts().deadLetter == 1)
        // ... or discards it.
        try outbox.discard(id: dead.id)
        #expect(try outbox.counts().total == 0)
        #expect(throws: StoreError(.notFound, "")) { try outbox.discard(id: dead.id) }
    }

    @Test("full jitter covers the whole interval and never exceeds the cap")
    func fullJitterBounds() {
        var policy = OutboxPolicy()
        policy.backoffBase = .milliseconds(100)
        policy.backoffCap = .seconds(10)
        var random = SplitMix64(seed: 6)
        for attempt in 1...12 {
            let ceiling = min(policy.backoffCap.nanoseconds, policy.backoffBase.nanoseconds << (attempt - 1))
            let delays = (0..<400).map { _ in policy.backoff(afterAttempt: attempt, using: &random).nanoseconds }
            #expect(delays.allSatisfy { (0...ceiling).contains($0) })
            // Uniform over [0, ceiling]: both the bottom and the top fifth are hit.
            #expect(delays.contains { $0 < ceiling / 5 })
            #expect(delays.contains { $0 > ceiling * 4 / 5 })
        }
        #expect(policy.backoff(afterAttempt: 500, using: &random) <= policy.backoffCap)
    }

    @Test("a conflict parks the command and blocks its entity until someone decides")
    func conflictParks() throws {
        let database = try GatewayDatabase.inMemory()
        let outbox = Outbox(database: database)
        _ = try enqueue([.create], in: database)
        var random = SplitMix64(seed: 7)
        let lease = try #require(try outbox.claim(limit: 1, now: simulationStart, using: &random).first)
        #expect(try outbox.fail(lease, error: "409: device exists with another owner", kind: .conflict, now: simulationStart, using: &random) == .conflict)
        try database.write { db in
            try Outbox.enqueue(db, entity: .device(serial: "D"), operation: .update, payload: "{}", now: simulationStart, id: UUIDv7.make(at: simulationStart, using: &random))
        }
        #expect(try outbox.claim(limit: 5, now: simulationStart.advanced(by: .seconds(3600)), using: &random).isEmpty)
        try outbox.retry(id: lease.command.id, now: simulationStart)
        #expect(try outbox.claim(limit: 5, now: simulationStart, using: &random).map(\.command.operation) == [.create])
    }

    @Test("counts by status and the age of the oldest undelivered command")
    func statusQueries() throws {
        let database = try GatewayDatabase.inMemory()
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 8)
        #expect(try outbox.oldestPendingAge(now: simulationStart) == nil)
        try database.write { db in
            for index in 0..<5 {
                let now = simulationStart.advanced(by: .seconds(Int64(index)))
                try Outbox.enqueue(db, entity: .device(serial: "S\(index)"), operation: .create, payload: "{}", now: now, id: UUIDv7.make(at: now, using: &random))
            }
        }
        let leases = try outbox.claim(limit: 2, now: simulationStart.advanced(by: .seconds(10)), using: &random)
        try outbox.fail(leases[0], error: "boom", kind: .rejected, now: simulationStart.advanced(by: .seconds(10)), using: &random)
        let counts = try outbox.counts()
        #expect((counts.pending, counts.inProgress, counts.failed, counts.conflict, counts.deadLetter) == (3, 1, 0, 0, 1))
        // S0 is dead-lettered; the oldest still on its way is S1 (in progress), enqueued at +1 s.
        #expect(try outbox.oldestPendingAge(now: simulationStart.advanced(by: .seconds(61))) == .seconds(60))
    }

    @Test("completing an event's last command marks it synced; a later update unsyncs it")
    func syncedMarking() throws {
        let database = try GatewayDatabase.inMemory()
        let service = ConsumptionService(database: database)
        let outbox = Outbox(database: database)
        try store([.deviceInfo(deviceInfo("S"), negotiatedVersion: 1), .hit(hit("S", sequence: 0))], in: service)
        var random = SplitMix64(seed: 9)
        let leases = try outbox.claim(limit: 10, now: simulationStart, using: &random)
        #expect(leases.count == 2)
        for lease in leases { try outbox.complete(lease, now: simulationStart.plus(milliseconds: 5)) }
        let key = EventKey(serial: "S", bootCounter: 1, sequence: 0)
        #expect(try service.event(key)?.syncedAt == simulationStart.plus(milliseconds: 5).nanoseconds)
        // A new anchor retimes it: unsynced until the update is pushed.
        try store([.anchor(serial: "S", anchor(ticks: 500, utc: simulationStart))], id: 2, in: service)
        #expect(try service.event(key)?.syncedAt == nil)
        #expect(try outbox.commands(for: .consumptionEvent(key)).map(\.operation) == [.update])
    }

    @Test("entity ids round-trip, serials with slashes included")
    func entityIds() {
        let entities: [OutboxEntity] = [
            .device(serial: "TT-1"), .deviceSettings(serial: "a/b"),
            .consumptionEvent(EventKey(serial: "x/y/z", bootCounter: 7, sequence: 123_456_789_012)),
            .telemetry(serial: "S/1", kind: .battery, receivedAt: 1_793_520_000_000_000_000),
        ]
        for entity in entities { #expect(OutboxEntity(kind: entity.kind, id: entity.id) == entity) }
        #expect(OutboxEntity(kind: .consumptionEvent, id: "noslash") == nil)
        #expect(OutboxEntity(kind: .consumptionEvent, id: "/1/2") == nil)
        #expect(OutboxEntity(kind: .deviceTelemetry, id: "S/unknown/5") == nil)
    }
}
