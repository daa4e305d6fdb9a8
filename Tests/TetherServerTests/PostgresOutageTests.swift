import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting
import TetherTestSupport

/// PostgreSQL stops under a running server, as a crash or an operator's restart stops it, and comes back. The
/// server must answer the meantime as its database's condition (503 + Retry-After: the gateway keeps its commands
/// and sends them again) and not as a 500, which a gateway counts against every command of the push and, after
/// `OutboxPolicy.maximumAttempts`, dead-letters (PostgresFailure).
@Suite("PostgreSQL stops under the server and comes back")
struct PostgresOutageTests {
    static func batch(_ round: Int, size: Int = 20) -> [PushCommand] {
        (0..<size).map { Commands.event("OUTAGE-\($0 % 2)", sequence: Int64(round * size + $0)) }
    }

    @Test("while PostgreSQL is down a push is a 503 unavailable problem with Retry-After; once it is back the same push is applied, once")
    func outage() async throws {
        let cluster: PostgresCluster
        do {
            // Its own (this test stops it), durable: an immediate stop must not take commits with it.
            cluster = try await PostgresCluster.start(durable: true)
        } catch let error as PostgresCluster.Unavailable {
            if ServerBackend.postgresRequired { throw error }
            Issue.record("SKIPPED: PostgreSQL unavailable: \(error)", severity: .warning)
            try Test.cancel("PostgreSQL unavailable: \(error)")
        }
        defer { cluster.destroy() }
        let database = try await cluster.createDatabase("tether_outage")
        let server = try await TestServer.start(storage: .postgres(cluster.configuration(database: database)))
        do {
            let api = try await server.api()
            #expect(try await api.push(Self.batch(0)).status == 200)

            try await cluster.stopServer()
            let batch = Self.batch(1)
            // Bounded: a request that waits for a database that is gone would hold the gateway's push as long.
            let answer = try await within(.seconds(60), "a push answered while PostgreSQL is down") { try await api.push(batch) }
            #expect(answer.status == 503, "\(answer.status) \(answer.text)")
            #expect(answer.problem?.problemType == .unavailable)
            #expect(answer.headers.first(name: "Retry-After") == "30")

            try await cluster.startServer()
            // The server's pool connects again by itself; the gateway would come back after Retry-After.
            try await waitUntil("the same push applied once PostgreSQL is back", seconds: 60) {
                let retried = try await api.push(batch)
                guard retried.status == 200 else { return false }
                #expect(try retried.decode(PushResponse.self).results.allSatisfy { $0.status == .applied })
                return true
            }
            let again = try await api.push(batch)
            #expect(try again.decode(PushResponse.self).results.allSatisfy { $0.status == .duplicate })
            #expect(try await server.store.statistics(tenant: "tenant-a").events == 2 * batch.count)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
