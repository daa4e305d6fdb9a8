import TetherDeviceModel
import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Storage limits: no ACK without storage, nothing unsynced deleted")
struct StorageLimitTests {
    @Test("SQLITE_FULL (a tiny max_page_count): the device is NACKed storageFull, keeps its events, and delivers them once there is room")
    func diskFullMeansNoAck() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("full.sqlite")
        // Create the schema with room, then reopen capped just above its size.
        let pages = try GatewayDatabase(path: path).read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 }
        var capped = GatewayDatabase.Configuration()
        capped.maximumPageCount = pages + 3
        let service = ConsumptionService(database: try GatewayDatabase(path: path, configuration: capped))
        var pair = try StoreLinkPair(profile: .v1_4(serial: "TT-FULL"), service: service)
        pair.scheduleHits(count: 400, every: .milliseconds(20), from: simulationStart.advanced(by: .seconds(1)))
        pair.run(for: .seconds(20))

        #expect(pair.failures.contains { $0.code == .diskFull })
        #expect(pair.reports.contains { if case .storageRefused = $0 { true } else { false } })
        #expect(pair.releasedBeforeStored.isEmpty)  // §8.2: nothing ACKed that is not in the database
        let stored = try service.eventCount()
        #expect(stored < 400)
        #expect(pair.released.count == stored)
        #expect(pair.firmware.eventStore.count + stored == pair.created.count)  // the device kept the rest

        // Room again (the cap lifted, as after pruning or a bigger disk): the device delivers what it kept.
        try pair.crashGateway(afterCommit: false, reopening: ConsumptionService(database: try GatewayDatabase(path: path)))
        pair.runUntilSettled(limit: .seconds(300))
        #expect(pair.isSettled)
        #expect(pair.releasedBeforeStored.isEmpty)
        #expect(try pair.service.eventCount() == 400)
    }

    @Test("the database cap refuses whole group commits, says so in the status, and recovers once synced data is pruned")
    func databaseCap() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cap.sqlite")
        let seedService = ConsumptionService(database: try GatewayDatabase(path: path))
        for batch in 0..<20 {
            try store((0..<50).map { .hit(hit("CAP", sequence: Int64(batch * 50 + $0))) }, id: PersistBatch.ID(batch), in: seedService)
        }
        let size = try seedService.database.databaseSize()
        var configuration = GatewayDatabase.Configuration()
        configuration.limits = StorageLimits(maximumDatabaseBytes: size, minimumFreeDiskBytes: nil)
        let database = try GatewayDatabase(path: path, configuration: configuration)
        let statuses = Locked<[StorageStatus]>([])
        let committer = GroupCommitter(service: ConsumptionService(database: database), clock: { simulationStart }, seed: 3) { status in
            statuses.withLock { $0.append(status) }
        }
        let refused = await committer.commit(PersistBatch(id: 100, items: [.hit(hit("CAP", sequence: 5000))]))
        #expect(throws: StoreError(.databaseCapReached, "")) { try refused.get() }
        #expect(committer.storageStatus == .refusing(StoreError(.databaseCapReached, "")))
        #expect(try ConsumptionService(database: database).eventCount() == 1000)  // nothing deleted to make room

        // Sync and prune everything but the newest events: the pages are free again.
        var random = SplitMix64(seed: 4)
        let outbox = Outbox(database: database)
        while true {
            let leases = try outbox.claim(limit: 200, now: simulationStart, using: &random)
            if leases.isEmpty { break }
            for lease in leases where lease.command.entityId != "CAP/1/999" { try outbox.complete(lease, now: simulationStart) }
        }
        let report = try Retention(database: database, policy: RetentionPolicy(keepSynced: .seconds(3600))).prune(now: simulationStart.advanced(by: .seconds(7200)))
        #expect(report.events == 999)  // the unsynced one stays
        let accepted = await committer.commit(PersistBatch(id: 101, items: [.hit(hit("CAP", sequence: 5000))]))
        #expect(throws: Never.self) { try accepted.get() }
        #expect(statuses.withLock { $0 } == [.refusing(StoreError(.databaseCapReached, "")), .accepting])
    }

    @Test("the free-disk floor refuses writes")
    func diskFloor() throws {
        let directory = try TemporaryDirectory()
        var configuration = GatewayDatabase.Configuration()
        configuration.limits = StorageLimits(maximumDatabaseBytes: nil, minimumFreeDiskBytes: .max)
        let service = ConsumptionService(database: try GatewayDatabase(path: directory.file("floor.sqlite"), configuration: configuration))
        #expect(throws: StoreError(.diskFloorReached, "")) { try store([.hit(hit("F", sequence: 0))], in: service) }
        #expect(try service.eventCount() == 0)
    }

    @Test("SQLite's storage errors all take the storage-full path", arguments: [
        (ResultCode.SQLITE_FULL, StoreError.Code.diskFull), (.SQLITE_IOERR_FSYNC, .ioError), (.SQLITE_IOERR_WRITE, .ioError),
        (.SQLITE_READONLY, .readOnly), (.SQLITE_CORRUPT, .corrupt), (.SQLITE_BUSY, .busy), (.SQLITE_CANTOPEN, .ioError),
    ])
    func errorMapping(_ resultCode: ResultCode, _ code: StoreError.Code) {
        let error = StoreError(DatabaseError(resultCode: resultCode, message: "injected"))
        #expect(error.code == code)
        #expect(error.isStorageCondition)
        #expect(error.storageFailure == .storageFull)
        #expect(!StoreError(DatabaseError(resultCode: .SQLITE_CONSTRAINT_CHECK)).isStorageCondition)
    }
}
