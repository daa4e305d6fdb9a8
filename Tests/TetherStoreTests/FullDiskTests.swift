import TetherDeviceModel
import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives
import TetherTestSupport

/// The gateway's database on a small real file system (a tmpfs of a few MiB, `SizeLimitedFilesystem`), filled
/// by a file beside it: SQLite itself meets ENOSPC (SQLITE_FULL), not a `max_page_count` it enforces before
/// writing. §8.10: whatever the cause, nothing is acknowledged that was not stored, nothing stored is harmed,
/// and the devices deliver what they kept once there is room again.
@Suite(
    "A disk that really fills (tmpfs): no ACK, nothing corrupted, everything flows again",
    .enabled(if: SizeLimitedFilesystem.mayMount, "mounting a tmpfs needs root (and CI must be able to)"))
struct FullDiskTests {
    /// 4 MiB: the schema and a few hundred events, and a WAL that fills the rest.
    static let diskBytes: Int64 = 4 << 20

    static func configuration(floor: Int64?) -> GatewayDatabase.Configuration {
        var configuration = GatewayDatabase.Configuration()
        configuration.limits = StorageLimits(maximumDatabaseBytes: nil, minimumFreeDiskBytes: floor)
        return configuration
    }

    static func batch(_ id: PersistBatch.ID, events: Int = 20) -> PersistBatch {
        PersistBatch(id: id, items: (0..<events).map { .hit(hit("DISK", sequence: Int64(id) * Int64(events) + Int64($0))) })
    }

    static func keys(_ batch: PersistBatch) -> [EventKey] {
        batch.items.compactMap { if case .hit(let hit) = $0 { hit.key } else { nil } }
    }

    /// Rows and distinct keys of consumption events, and outbox create commands and their distinct entities.
    static func counts(_ database: GatewayDatabase) throws -> (events: Int, distinct: Int, creates: Int, distinctCreates: Int) {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM consumptionEvent),
                       (SELECT COUNT(*) FROM (SELECT DISTINCT deviceId, bootCounter, sequence FROM consumptionEvent)),
                       (SELECT COUNT(*) FROM outboxCommand WHERE entityType = 'consumptionEvent' AND operation = 'create'),
                       (SELECT COUNT(DISTINCT entityId) FROM outboxCommand WHERE entityType = 'consumptionEvent' AND operation = 'create')
                """)!
            return (row[0], row[1], row[2], row[3])
        }
    }

    @Test("floor off: SQLite meets ENOSPC, the batch is refused (no ACK), what was ACKed is intact, and after space returns every event is stored exactly once")
    func sqliteMeetsEnospc() async throws {
        let disk = try SizeLimitedFilesystem(bytes: Self.diskBytes)
        let path = disk.file("gateway.sqlite")
        let database = try GatewayDatabase(path: path, configuration: Self.configuration(floor: nil))
        let statuses = Locked<[StorageStatus]>([])
        let committer = GroupCommitter(service: ConsumptionService(database: database), clock: { simulationStart }, seed: 5) { status in
            statuses.withLock { $0.append(status) }
        }
        // Leave a little room, so that ENOSPC comes after some commits, not at the first.
        try disk.fill(leaving: 256 << 10)

        var acknowledged: [EventKey] = []
        var refused: [PersistBatch] = []
        var next: PersistBatch.ID = 0
        while refused.isEmpty, next < 2000 {
            let batch = Self.batch(next)
            next += 1
            switch await committer.commit(batch) {
            case .success(let outcome): acknowledged += outcome.storedEvents
            case .failure(let error):
                #expect(error.code == .diskFull, "\(error)")
                refused.append(batch)
            }
        }
        try #require(!refused.isEmpty, "the disk never filled: \(disk.freeBytes) bytes free after \(next) batches")
        #expect(acknowledged.count > 0)
        // Still full: a group submitted together is refused as a whole, every batch hears the error.
        let group = (0..<3).map { _ in defer { next += 1 }; return Self.batch(next) }
        let results = await withTaskGroup(of: Result<BatchOutcome, StoreError>.self) { tasks in
            for batch in group { tasks.addTask { await committer.commit(batch) } }
            return await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { if case .failure(let error) = $0 { error.isStorageCondition } else { false } })
        refused += group
        #expect(committer.storageStatus == .refusing(StoreError(.diskFull, "")))

        // While full: every ACKed event is there, no refused one is (nothing partial), and the file is sound, as a
        // second connection (a fresh reader over the same WAL) sees it.
        let reader = try GatewayDatabase(path: path, configuration: Self.configuration(floor: nil))
        for database in [database, reader] {
            let counts = try Self.counts(database)
            #expect(counts.events == acknowledged.count)
            #expect(counts.distinct == counts.events)
            #expect(counts.creates == counts.events)
            #expect(try database.integrityProblems() == [])
        }
        let service = ConsumptionService(database: reader)
        for key in acknowledged { #expect(try service.event(key) != nil, "ACKed \(key) is missing") }
        for key in refused.flatMap(Self.keys) { #expect(try service.event(key) == nil, "refused \(key) was stored") }
        #expect(try database.writerDurability().journalMode == "wal")

        // Space returns (the log beside the database is rotated away): the devices retry what was refused, new
        // batches follow, and every event is stored exactly once.
        disk.release()
        for batch in refused {
            let outcome = try await committer.commit(batch).get()
            #expect(outcome.storedEvents == Self.keys(batch))
            acknowledged += outcome.storedEvents
        }
        for _ in 0..<5 {
            acknowledged += try await committer.commit(Self.batch(next)).get().storedEvents
            next += 1
        }
        // A retry of an already stored batch (its ACK was lost) is ACKed again and stored once (§8.8).
        let again = try await committer.commit(refused[0]).get()
        #expect(again.storedEvents.isEmpty)
        #expect(again.duplicateEvents == Self.keys(refused[0]))
        #expect(statuses.withLock { $0 } == [.refusing(StoreError(.diskFull, "")), .accepting])
        #expect(Set(acknowledged).count == acknowledged.count)
        #expect(try Self.counts(database) == (acknowledged.count, acknowledged.count, acknowledged.count, acknowledged.count))
        // The WAL checkpoints into the database file again.
        let checkpoint = try #require(try database.checkpoint())
        #expect(checkpoint.checkpointedFrames == checkpoint.walFrames)

        // And a cold start from the files finds the same.
        let reopened = try GatewayDatabase(path: path, configuration: Self.configuration(floor: nil))
        #expect(try reopened.integrityProblems() == [])
        #expect(try Self.counts(reopened).events == acknowledged.count)
    }

    @Test("the free-disk floor on a real file system: statvfs of the tmpfs refuses writes before SQLite runs out, and lets them through once space returns")
    func floorOnARealFilesystem() async throws {
        let disk = try SizeLimitedFilesystem(bytes: Self.diskBytes)
        let floor: Int64 = 1 << 20
        let database = try GatewayDatabase(path: disk.file("gateway.sqlite"), configuration: Self.configuration(floor: floor))
        let committer = GroupCommitter(service: ConsumptionService(database: database), clock: { simulationStart }, seed: 6)
        _ = try await committer.commit(Self.batch(0)).get()

        try disk.fill(leaving: floor - 64 << 10)
        #expect(disk.freeBytes < floor)
        let refused = await committer.commit(Self.batch(1))
        #expect(throws: StoreError(.diskFloorReached, "")) { try refused.get() }
        #expect(try Self.counts(database).events == 20)
        // The floor keeps room for everything else: SQLite was never near ENOSPC.
        #expect(disk.freeBytes > 512 << 10)

        disk.release()
        #expect(try await committer.commit(Self.batch(1)).get().storedEvents == Self.keys(Self.batch(1)))
        #expect(committer.storageStatus == .accepting)
        #expect(try Self.counts(database).events == 40)
    }

    @Test("a device on a gateway whose disk fills: no ACK while full, the device keeps its events, and delivers all of them once there is room")
    func deviceKeepsItsEvents() async throws {
        let disk = try SizeLimitedFilesystem(bytes: Self.diskBytes)
        let service = ConsumptionService(database: try GatewayDatabase(path: disk.file("gateway.sqlite"), configuration: Self.configuration(floor: nil)))
        var pair = try StoreLinkPair(profile: .v1_4(serial: "TT-DISK"), service: service)
        // The daemon checkpoints the WAL every 250 ms (`GatewayDatabase.runCheckpoints`), so that it is reused from
        // its start instead of growing by every commit; so does this, every 250 simulated ms. A checkpoint that
        // fails (the database file cannot grow) is retried at the next tick, as the daemon's is. Without it the WAL
        // alone eats the room the filler gives back, and then no checkpoint can run (see docs/design/durability.md).
        // Tens of seconds of synchronous work in all: it yields between steps so that, in the parallel run, it
        // never holds one of the concurrency pool's two threads for long (see `onOwnThread`).
        func run(seconds: Int, untilSettled: Bool = false) async {
            for _ in 0..<seconds where !(untilSettled && pair.isSettled) {
                for _ in 0..<4 {
                    _ = try? service.database.checkpoint()
                    pair.run(for: .milliseconds(250))
                    await Task.yield()
                }
            }
        }
        pair.scheduleHits(count: 400, every: .milliseconds(20), from: simulationStart.advanced(by: .seconds(1)))
        await run(seconds: 3)
        let before = try service.eventCount()
        #expect(before > 0)

        try disk.fillCompletely()
        await run(seconds: 20)
        #expect(pair.failures.contains { $0.code == .diskFull })
        #expect(pair.reports.contains { if case .storageRefused = $0 { true } else { false } })
        #expect(pair.releasedBeforeStored.isEmpty)  // §8.2: nothing ACKed that is not in the database
        let stored = try service.eventCount()
        #expect(stored < 400)
        #expect(pair.released.count == stored)
        #expect(pair.firmware.eventStore.count + stored == pair.created.count)  // the device kept the rest
        #expect(try service.database.integrityProblems() == [])

        // Space returns: the device delivers what it kept over the same connection, without a gateway restart.
        disk.release()
        await run(seconds: 300, untilSettled: true)
        #expect(pair.isSettled)
        #expect(pair.releasedBeforeStored.isEmpty)
        #expect(try service.eventCount() == 400)
        #expect(try Self.counts(service.database) == (400, 400, 400, 400))
    }
}
