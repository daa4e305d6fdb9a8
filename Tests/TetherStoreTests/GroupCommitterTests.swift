import Dispatch
import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore

@Suite("GroupCommitter: one durable transaction for many devices, completion only after commit")
struct GroupCommitterTests {
    struct InjectedFault: Error {}

    /// Holds the writer until `open()`: whatever is submitted meanwhile lands in the next group.
    final class WriterGate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        init(_ database: GatewayDatabase) { database.asyncWriteWithoutTransaction { [semaphore] _ in semaphore.wait() } }
        func open() { semaphore.signal() }
    }

    @Test("batches of many devices share one transaction, and each completes only once its rows are committed")
    func groupsAndCompletesAfterCommit() async throws {
        let directory = try TemporaryDirectory()
        let database = try GatewayDatabase(path: directory.file("group.sqlite"))
        let service = ConsumptionService(database: database)
        let committer = GroupCommitter(service: service, clock: { simulationStart }, seed: 1)
        // Another connection to the file sees only what is committed.
        let observer = ConsumptionService(database: try GatewayDatabase(path: directory.file("group.sqlite")))
        let work = (0..<25).flatMap { sequence in
            (0..<8).map { device in PersistBatch(id: PersistBatch.ID(sequence), items: [.hit(hit("G\(device)", sequence: Int64(sequence)))]) }
        }
        let committedWhenCompleted = Locked(0)
        let gate = WriterGate(database)
        for batch in work {
            committer.submit(batch) { result in
                guard case .success(let outcome) = result, let key = outcome.storedEvents.first else { return }
                if (try? observer.event(key)) != nil { committedWhenCompleted.withLock { $0 += 1 } }
            }
        }
        gate.open()
        // Completions run in submission order: once this one is back, all are.
        let last = await committer.commit(PersistBatch(id: 999, items: [.hit(hit("G-last", sequence: 0))]))
        #expect(throws: Never.self) { try last.get() }
        #expect(committedWhenCompleted.withLock { $0 } == work.count)
        let statistics = committer.statistics
        #expect(statistics.batchesCommitted == work.count + 1)
        #expect(statistics.transactions <= 2)
        #expect(statistics.largestGroup >= work.count)
        #expect(try service.eventCount() == work.count + 1)
    }

    @Test("a batch whose content fails is rolled back alone; the others in its transaction commit")
    func batchIsolation() async throws {
        let database = try GatewayDatabase.inMemory()
        var service = ConsumptionService(database: database)
        service.faults.afterEntityWrite = { entity in
            if entity == .consumptionEvent(EventKey(serial: "BAD", bootCounter: 1, sequence: 1)) { throw InjectedFault() }
        }
        let committer = GroupCommitter(service: service, clock: { simulationStart }, seed: 2)
        let results = Locked<[PersistBatch.ID: Result<BatchOutcome, StoreError>]>([:])
        let gate = WriterGate(database)
        for (id, items) in [
            (PersistBatch.ID(1), [PersistItem.hit(hit("OK1", sequence: 0))]),
            (2, [.hit(hit("BAD", sequence: 0)), .hit(hit("BAD", sequence: 1))]),
            (3, [.hit(hit("OK2", sequence: 0))]),
        ] {
            committer.submit(PersistBatch(id: id, items: items)) { result in results.withLock { $0[id] = result } }
        }
        gate.open()
        _ = await committer.commit(PersistBatch(id: 4, items: []))
        let outcomes = results.withLock { $0 }
        #expect(committer.statistics.largestGroup >= 3)  // the three batches shared one transaction
        #expect((try? outcomes[1]?.get()) != nil)
        #expect((try? outcomes[3]?.get()) != nil)
        guard case .failure(let error)? = outcomes[2] else {
            Issue.record("the faulty batch was acknowledged")
            return
        }
        #expect(error.storageFailure == .storageFull)
        #expect(try service.eventCount(serial: "BAD") == 0)  // its first event rolled back with it
        #expect(try database.contents(serial: "BAD").devices.isEmpty)  // and so did its placeholder device
        #expect(try service.eventCount() == 2)
        #expect(committer.storageStatus == .accepting)
    }
}

/// Another service's batch in the shared group commit: a sync-cursor write standing in for the health lanes'
/// "samples and cursor in one transaction".
@Suite("GroupCommitter: batches of any service share the transaction")
struct GroupCommitWorkTests {
    struct CursorWork: GroupCommitWork {
        let name: String
        let value: String
        var fails = false

        func apply(in db: Database, context: inout WriteContext) throws -> String {
            try db.execute(
                sql: "INSERT INTO syncCursor (name, value, updatedAt) VALUES (?, ?, ?)",
                arguments: [name, value, context.now.nanoseconds])
            if fails { throw GroupCommitterTests.InjectedFault() }
            return value
        }
    }

    @Test("another service's batch commits in the same transaction as consumption batches, completed after COMMIT")
    func otherServicesShareTheGroup() async throws {
        let directory = try TemporaryDirectory()
        let database = try GatewayDatabase(path: directory.file("mixed.sqlite"))
        let service = ConsumptionService(database: database)
        let committer = GroupCommitter(service: service, clock: { simulationStart }, seed: 3)
        let observer = try GatewayDatabase(path: directory.file("mixed.sqlite"))
        let seenAtCompletion = Locked<[String]>([])
        let outcomes = Locked<[Result<String, StoreError>]>([])
        let gate = GroupCommitterTests.WriterGate(database)
        committer.submit(PersistBatch(id: 1, items: [.hit(hit("MX", sequence: 0))])) { _ in }
        for (name, fails) in [("health-lane-a", false), ("health-lane-b", true), ("health-lane-c", false)] {
            committer.submit(CursorWork(name: name, value: "7", fails: fails)) { result in
                outcomes.withLock { $0.append(result) }
                let committed = (try? observer.read { db in try String.fetchOne(db, sql: "SELECT value FROM syncCursor WHERE name = ?", arguments: [name]) }) ?? nil
                seenAtCompletion.withLock { $0.append("\(name)=\(committed ?? "absent")") }
            }
        }
        committer.submit(PersistBatch(id: 2, items: [.hit(hit("MX", sequence: 1))])) { _ in }
        gate.open()
        let last = await committer.commit(CursorWork(name: "last", value: "8"))
        #expect(try last.get() == "8")
        let results = outcomes.withLock { $0 }
        #expect(results.count == 3)
        #expect(try results[0].get() == "7")
        #expect(throws: StoreError.self) { try results[1].get() }
        #expect(try results[2].get() == "7")
        // Each completion saw its row committed (another connection reads only committed data); the failed batch's
        // row was rolled back alone.
        #expect(seenAtCompletion.withLock { $0 } == ["health-lane-a=7", "health-lane-b=absent", "health-lane-c=7"])
        #expect(committer.statistics.largestGroup >= 5)
        #expect(try service.eventCount(serial: "MX") == 2)
    }
}

@Suite("GroupCommitter: commit observers")
struct GroupCommitObserverTests {
    @Test("observers hear every transaction that committed something, after the batches' completions, never a failed one")
    func observersFollowCommits() async throws {
        let database = try GatewayDatabase.inMemory()
        var service = ConsumptionService(database: database)
        service.faults.afterEntityWrite = { entity in
            if entity == .consumptionEvent(EventKey(serial: "OBS-BAD", bootCounter: 1, sequence: 0)) {
                throw GroupCommitterTests.InjectedFault()
            }
        }
        let committer = GroupCommitter(service: service, clock: { simulationStart }, seed: 4)
        let log = Locked<[String]>([])
        committer.observeCommits { count in log.withLock { $0.append("committed \(count)") } }
        _ = await committer.commit(PersistBatch(id: 1, items: [.hit(hit("OBS", sequence: 0))]))
        _ = await committer.commit(PersistBatch(id: 2, items: [.hit(hit("OBS-BAD", sequence: 0))]))
        committer.submit(PersistBatch(id: 3, items: [.hit(hit("OBS", sequence: 1))])) { _ in log.withLock { $0.append("batch 3 completed") } }
        _ = await committer.commit(PersistBatch(id: 4, items: []))
        // Observers run after the completions, so `commit` returns before its transaction's observer ran: wait
        // (bounded) until the successful batches are all counted, then check nothing else was.
        _ = await committer.commit(PersistBatch(id: 5, items: [.hit(hit("OBS", sequence: 2))]))
        func committedTotal() -> Int {
            log.withLock { $0.compactMap { $0.hasPrefix("committed ") ? Int($0.dropFirst("committed ".count)) : nil }.reduce(0, +) }
        }
        for _ in 0..<500 where committedTotal() < 4 {
            try await Task.sleep(for: .milliseconds(10))
        }
        let entries = log.withLock { $0 }
        #expect(entries.first == "committed 1")
        // The failed batch's transaction committed nothing: no notification for it. Every notification names at
        // least one committed batch, and the four successful batches (1, 3, the empty 4, and 5) are all counted.
        let counts = entries.compactMap { $0.hasPrefix("committed ") ? Int($0.dropFirst("committed ".count)) : nil }
        #expect(counts.count == entries.count - 1)
        #expect(counts.allSatisfy { $0 > 0 }, "\(entries)")
        #expect(counts.reduce(0, +) == 4, "\(entries)")
        #expect(entries.count >= 3)
        let completed = try #require(entries.firstIndex(of: "batch 3 completed"))
        #expect(entries[(completed + 1)...].first?.hasPrefix("committed") == true)
    }
}
