import Foundation
import GRDB
import Testing
import TetherServer
import TetherSyncTesting

@Suite("the SQLite store's durability")
struct DurabilityTests {
    @Test("the connection that commits runs with synchronous = FULL, although GRDB's pool sets its writer to NORMAL")
    func writerIsFull() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // Why the store must act: a pool configured the obvious way ends up NORMAL on its writer in WAL mode.
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let plain = try DatabasePool(path: directory + "/plain.sqlite", configuration: configuration)
        #expect(try await plain.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 1)

        let store = try SQLiteServerStore(path: directory + "/server.sqlite")
        try await store.migrate()
        #expect(try store.writerSynchronous() == 2)
        let journal = try await DatabaseQueue(path: directory + "/server.sqlite").read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
    }
}
