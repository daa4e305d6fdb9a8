import AsyncHTTPClient
import Foundation
import NIOCore
import LinkProtocol
import Logging
import Synchronization
import SyncContract
import Testing
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting
import TetherPrimitives

/// A gateway database and a real server, with the gateway's token. Skips loudly without PostgreSQL (fails when
/// `TETHER_REQUIRE_POSTGRES=1`).
struct SyncSetup: Sendable {
    let server: TestServer
    let gateway: GatewayFixture
    let token: String
    let tenant: String
    let clock: GatewayClock

    let engines = Engines()

    /// An engine on the gateway's database; `withSync` shuts it down at the end.
    func engine(seed: UInt64 = 42, database: GatewayDatabase? = nil, configure: (inout SyncConfiguration) -> Void = { _ in }) throws -> SyncEngine {
        let engine = try SyncEngine(database: database ?? gateway.database, configuration: configuration(configure), now: clock.read, seed: seed, logger: quietLogger)
        engines.list.withLock { $0.append(engine) }
        return engine
    }

    final class Engines: Sendable {
        let list = Mutex<[SyncEngine]>([])

        func shutdown() async {
            for engine in list.withLock({ $0 }) { await engine.shutdown() }
        }
    }

    func configuration(_ configure: (inout SyncConfiguration) -> Void = { _ in }) -> SyncConfiguration {
        var configuration = SyncConfiguration(baseURL: server.baseURL, token: BearerToken(token))
        configuration.backoff = Backoff(base: .milliseconds(10), cap: .milliseconds(100))
        // Generous: a test that wants a timeout sets its own. 10 s was exceeded by a PostgreSQL push when the whole
        // suite loaded the 2 cores, and the drain under test stopped as if the link had failed.
        configuration.requestTimeout = .seconds(60)
        configure(&configuration)
        return configuration
    }

    var outbox: Outbox { Outbox(database: gateway.database) }

    /// Syncs until the outbox is empty or `attempts` syncs have run; returns every report.
    func drain(_ engine: SyncEngine, attempts: Int = 50) async throws -> [SyncReport] {
        var reports: [SyncReport] = []
        for _ in 0..<attempts {
            reports.append(await engine.sync(trigger: .manual))
            clock.advance(by: .seconds(3600))  // past every per-command backoff and lease
            if try outbox.counts().total == 0, reports.last?.succeeded == true { break }
        }
        return reports
    }
}

/// The gateway's wall clock in tests: starts at the fixture's start and moves when told.
final class GatewayClock: Sendable {
    /// A day after the fixture stored its data, so everything it queued is due.
    private let instant = Mutex(GatewayFixture.start.advanced(by: .seconds(86_400)))
    @Sendable func read() -> Timestamp { instant.withLock { $0 } }
    func advance(by duration: Duration) { instant.withLock { $0 = $0.advanced(by: duration) } }
}

let quietLogger = Logger(label: "tether-sync-test") { _ in SwiftLogNoOpLogHandler() }

func withSync(
    _ backend: ServerBackend = .sqlite, tenant: String = "home", configureServer: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (SyncSetup) async throws -> Void
) async throws {
    let directory = try makeTemporaryDirectory("tether-sync-test")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let storage: ServerStorage
    do {
        storage = try await backend.freshStorage(in: directory)
    } catch let error as PostgresCluster.Unavailable {
        // Only "not installed" may skip; a PostgreSQL that would not start (PostgresCluster.StartFailed) is thrown
        // on and fails the test.
        if ServerBackend.postgresRequired {
            Issue.record("PostgreSQL is required (TETHER_REQUIRE_POSTGRES=1) but not installed: \(error)")
            return
        }
        print("⚠️  WARNING: PostgreSQL unavailable, skipping the PostgreSQL run of this test: \(error)")
        Issue.record("SKIPPED: PostgreSQL unavailable: \(error)", severity: .warning)
        try Test.cancel("PostgreSQL unavailable: \(error)")
    }
    let server = try await TestServer.start(storage: storage, configure: configureServer)
    let gateway = try GatewayFixture()
    defer { gateway.remove() }
    let setup = SyncSetup(server: server, gateway: gateway, token: try await server.token(tenant: tenant, gateway: "gw-1"), tenant: tenant, clock: GatewayClock())
    do {
        try await body(setup)
    } catch {
        await setup.engines.shutdown()
        await server.stop()
        throw error
    }
    await setup.engines.shutdown()
    await server.stop()
}

/// Commands queued in a gateway's outbox, by status.
func outboxCommands(_ setup: SyncSetup) throws -> Int { try setup.outbox.counts().total }

extension Array where Element == SyncReport {
    var totalApplied: Int { reduce(0) { $0 + $1.push.applied } }
    var totalDuplicates: Int { reduce(0) { $0 + $1.push.duplicates } }
}

/// Another gateway of the tenant, pushing by hand.
struct API: Sendable {
    let baseURL: String
    let token: String

    struct Answer: Sendable {
        var status: Int
        var body: Data
    }

    func push(_ commands: [PushCommand]) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + SyncAPI.pushPath)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(PushRequest(commands: commands))))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 24)
        return Answer(status: Int(response.status.code), body: Data(body.readableBytesView))
    }
}
