import Foundation
import GRDB
import SyncContract
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

@Suite("an unexpected storage error")
struct UnexpectedErrorTests {
    /// A storage failure the server does not expect (here: its table dropped behind its back) is a 500 problem
    /// naming an incident id, with a quiet logger too. Before, the 500 path read Hummingbird's `context.id`, which
    /// force-unwraps a metadata value a no-op logger never keeps, and the whole process died instead.
    @Test("is answered as a 500 problem with an incident id, not a crash, even with a logger that keeps nothing")
    func answeredNotCrashed() async throws {
        try await withServer(.sqlite) { server in
            let api = try await server.api()
            guard case .sqlite(let path) = server.configuration.storage else {
                Issue.record("expected a SQLite server")
                return
            }
            let vandal = try DatabaseQueue(path: path)
            try await vandal.write { db in try db.execute(sql: "DROP TABLE consumption_event") }
            let answer = try await api.push([Commands.event("INC-1", sequence: 1)])
            #expect(answer.status == 500)
            let problem = try answer.decode(Problem.self)
            #expect(problem.detail?.hasPrefix("incident ") == true, "\(problem)")
            #expect(problem.detail?.count == "incident ".count + 36)
        }
    }
}
