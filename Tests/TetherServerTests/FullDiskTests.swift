import Foundation
import GRDB
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting
import TetherTestSupport

/// tether-server's SQLite database on a small real file system (`SizeLimitedFilesystem`, a tmpfs) that a filler
/// file fills: SQLite meets ENOSPC in the middle of a push's transaction.
@Suite(
    "the server's database on a disk that really fills (tmpfs)",
    .enabled(if: SizeLimitedFilesystem.mayMount, "mounting a tmpfs needs root (and CI must be able to)"))
struct ServerFullDiskTests {
    static func batch(_ round: Int, size: Int = 50) -> [PushCommand] {
        (0..<size).map { Commands.event("FULL-\($0 % 4)", sequence: Int64(round * size + $0)) }
    }

    @Test("a push that cannot be stored is a 503 unavailable problem with Retry-After, nothing of it is applied, and pushes succeed again once space returns")
    func pushOnAFullDisk() async throws {
        let disk = try SizeLimitedFilesystem(bytes: 4 << 20)
        let path = disk.file("server.sqlite")
        let server = try await TestServer.start(storage: .sqlite(path: path))
        do {
            let api = try await server.api()
            // Leave a little room, so that the disk fills after some pushes were applied.
            try disk.fill(leaving: 384 << 10)
            var applied: [PushCommand] = []
            var refused: (batch: [PushCommand], answer: API.Answer)?
            var beforeRefusal = try await server.store.statistics(tenant: "tenant-a")
            for round in 0..<400 where refused == nil {
                let batch = Self.batch(round)
                let answer = try await api.push(batch)
                if answer.status == 200 {
                    #expect(try answer.decode(PushResponse.self).results.allSatisfy { $0.status == .applied })
                    applied += batch
                    beforeRefusal = try await server.store.statistics(tenant: "tenant-a")
                } else {
                    refused = (batch, answer)
                }
            }
            let (batch, answer) = try #require(refused, "the disk never filled: \(disk.freeBytes) bytes free")
            #expect(!applied.isEmpty)
            // §"Unavailable" of docs/specs/sync-api.yaml: retried unchanged, not counted against the commands.
            #expect(answer.status == 503, "\(answer.status) \(answer.text)")
            #expect(answer.headers.first(name: "Content-Type") == SyncAPI.problemMediaType)
            #expect(answer.problem?.problemType == .unavailable)
            #expect(answer.problem?.detail?.contains("storage is full") == true)
            #expect(answer.headers.first(name: "Retry-After") == "30")
            #expect(answer.problem?.retryAfterSeconds == 30)

            // Nothing partial: exactly the applied pushes are there (events, command log, feed), the file is sound,
            // the server still answers.
            var statistics = try await server.store.statistics(tenant: "tenant-a")
            #expect(statistics == beforeRefusal)
            #expect(statistics.events == applied.count)
            #expect(statistics.appliedCommands == applied.count)
            #expect(try await api.changes().status == 200)
            let integrity = try await DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            #expect(integrity == ["ok"])

            // Space returns: the refused batch is applied as it was sent, and a retry of it is all duplicates.
            disk.release()
            let retried = try await api.push(batch)
            #expect(retried.status == 200)
            #expect(try retried.decode(PushResponse.self).results.allSatisfy { $0.status == .applied })
            let again = try await api.push(batch)
            #expect(try again.decode(PushResponse.self).results.allSatisfy { $0.status == .duplicate })
            statistics = try await server.store.statistics(tenant: "tenant-a")
            #expect(statistics.events == applied.count + batch.count)
            #expect(statistics.appliedCommands == applied.count + batch.count)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// The same on PostgreSQL, with its data directory on the tmpfs. PostgreSQL meets ENOSPC extending a table or an
    /// index and fails the statement with SQLSTATE 53100 disk_full, rolling the transaction back (PostgresFailure);
    /// the server must answer that as it answers SQLite's SQLITE_FULL. The WAL is kept out of the way, as an operator
    /// would size it: 1 MiB segments, written before the disk fills and recycled by checkpoints (min_wal_size), so
    /// that the pushes write WAL into segments that exist. (A WAL segment that cannot be created is a PANIC and a
    /// crash restart, which the server answers 503 too, but which this test does not aim for.)
    @Test("PostgreSQL on a full disk: a push it cannot store is a 503 unavailable problem with Retry-After, nothing of it is applied, and pushes succeed again once space returns")
    func pushOnAFullPostgresDisk() async throws {
        let disk = try SizeLimitedFilesystem(bytes: 192 << 20)
        chmod(disk.path, 0o755)  // the postgres user enters it (the cluster runs as postgres under root)
        let cluster: PostgresCluster
        do {
            cluster = try await PostgresCluster.start(
                parent: disk.path, initdbOptions: ["--wal-segsize=1"],
                serverOptions: ["min_wal_size=48MB", "max_wal_size=64MB", "wal_recycle=on", "checkpoint_timeout=3600", "autovacuum=off"])
        } catch let error as PostgresCluster.Unavailable {
            if ServerBackend.postgresRequired { throw error }
            Issue.record("SKIPPED: PostgreSQL unavailable: \(error)", severity: .warning)
            try Test.cancel("PostgreSQL unavailable: \(error)")
        }
        defer { cluster.destroy() }
        let database = try await cluster.createDatabase("tether_full")
        // WAL written and recycled before the disk fills: 40 MiB of it, then two checkpoints.
        try await cluster.psql(database: database, """
            CREATE TABLE wal_filler AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 160000) AS g;
            DROP TABLE wal_filler; CHECKPOINT; CHECKPOINT;
            """)
        let server = try await TestServer.start(storage: .postgres(cluster.configuration(database: database)))
        do {
            let api = try await server.api()
            #expect(try await api.push(Self.batch(0)).status == 200)
            var applied = Self.batch(0)
            try disk.fill(leaving: 256 << 10)
            var refused: (batch: [PushCommand], answer: API.Answer)?
            var beforeRefusal = try await server.store.statistics(tenant: "tenant-a")
            for round in 1..<2000 where refused == nil {
                let batch = Self.batch(round)
                let answer = try await api.push(batch)
                if answer.status == 200 {
                    applied += batch
                    beforeRefusal = try await server.store.statistics(tenant: "tenant-a")
                } else {
                    refused = (batch, answer)
                }
            }
            let (batch, answer) = try #require(refused, "the disk never filled: \(disk.freeBytes) bytes free")
            #expect(answer.status == 503, "\(answer.status) \(answer.text)")
            #expect(answer.problem?.problemType == .unavailable)
            #expect(answer.problem?.detail?.contains("storage is full") == true, "\(answer.text)")
            #expect(answer.headers.first(name: "Retry-After") == "30")
            let statistics = try await server.store.statistics(tenant: "tenant-a")
            #expect(statistics == beforeRefusal)
            #expect(statistics.events == applied.count)

            disk.release()
            let retried = try await api.push(batch)
            #expect(retried.status == 200, "\(retried.status) \(retried.text)")
            #expect(try retried.decode(PushResponse.self).results.allSatisfy { $0.status == .applied })
            let again = try await api.push(batch)
            #expect(try again.decode(PushResponse.self).results.allSatisfy { $0.status == .duplicate })
            #expect(try await server.store.statistics(tenant: "tenant-a").events == applied.count + batch.count)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
