import Foundation
import LinkProtocol
import SyncContract
import Testing
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `tether-server` as a child process, so a test can SIGKILL it mid-batch.
final class ServerProcess {
    let child: ChildProcess
    let port: Int

    /// Starts `tether-server serve` and waits (bounded) for its "listening on" line.
    init(arguments: [String], log: String) async throws {
        let binary = try BuiltProducts.require("tether-server", override: "TETHER_SERVER_BINARY")
        let child = try ChildProcess(binary, ["serve"] + arguments, output: .file(log))
        self.child = child
        var port: Int?
        try await waitUntil("tether-server to listen", seconds: 30, every: .milliseconds(50)) {
            // The last such line: a restarted server appends to the same log.
            port = child.standardOutput.split(separator: "\n").last { $0.hasPrefix("listening on ") }
                .flatMap { Int($0.split(separator: ":").last ?? "") }
            return port != nil || !child.isRunning
        }
        self.port = try #require(port, "tether-server did not start: \(child.standardOutput)")
    }

    func kill() { child.kill() }

    /// SIGTERM, and wait (bounded) for the exit.
    func terminate() async throws {
        child.signal(SIGTERM)
        try await child.wait(timeout: .seconds(60))
    }
}

@Suite("either side restarted mid-batch", .serialized)
struct RestartTests {
    @Test("the server is SIGKILLed mid-drain and restarted: every command lands exactly once")
    func serverKilled() async throws {
        let directory = try makeTemporaryDirectory("tether-restart")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/server.sqlite"
        let tokenStore = try SQLiteServerStore(path: database)
        try await tokenStore.migrate()
        let token = try await TokenAdministration.issue(store: tokenStore, tenant: "home", gateway: "gw-1").reveal
        // Every push is slowed, so the kill lands while batches are in flight.
        var server = try await ServerProcess(
            arguments: ["--db", database, "--listen", "127.0.0.1:0", "--inject-faults", "delay:150ms", "--fault-rate", "1"], log: directory + "/server.log")
        let gateway = try GatewayFixture()
        defer { gateway.remove() }
        try gateway.storeEvents(6000, devices: 3)
        let queued = try Outbox(database: gateway.database).counts().total
        let clock = GatewayClock()
        var configuration = SyncConfiguration(baseURL: "http://127.0.0.1:\(server.port)", token: BearerToken(token))
        configuration.batchSize = 200
        configuration.requestTimeout = .seconds(5)
        let engine = try SyncEngine(database: gateway.database, configuration: configuration, now: clock.read, seed: 3, logger: quietLogger)
        let drain = Task { await engine.sync(trigger: .manual) }
        // Kill once some batches have committed (bounded polling of the server's own file).
        let deadline = ContinuousClock.now + .seconds(60)
        while try await tokenStore.statistics(tenant: "home").appliedCommands < 1000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        server.kill()
        let interrupted = await drain.value
        #expect(interrupted.failure?.kind == .network || interrupted.failure?.kind == .timeout, "\(String(describing: interrupted.failure))")
        let appliedBeforeKill = try await tokenStore.statistics(tenant: "home").appliedCommands
        #expect(appliedBeforeKill > 0 && appliedBeforeKill < queued)
        server = try await ServerProcess(arguments: ["--db", database, "--listen", "127.0.0.1:\(server.port)"], log: directory + "/server.log")
        var reports: [SyncReport] = []
        for _ in 0..<10 {
            clock.advance(by: .seconds(3600))
            let report = await engine.sync(trigger: .manual)
            reports.append(report)
            if report.succeeded, try Outbox(database: gateway.database).counts().total == 0 { break }
        }
        try await server.terminate()
        await engine.shutdown()
        #expect(reports.last?.succeeded == true)
        let statistics = try await tokenStore.statistics(tenant: "home")
        #expect(statistics.events == 6000)
        #expect(statistics.appliedCommands == queued, "no command applied twice, none lost")
        #expect(try Outbox(database: gateway.database).counts().total == 0)
    }

    /// Issue 15, item 4: "upload exactly once under server kills". The health uploader drains 3000 glucose records and
    /// 40 tombstones (deletions and corrections) into a tether-server process that is SIGKILLed once some batches have
    /// committed, and restarted on the same file: every sample on the server once by uid and by reading, every
    /// tombstone once and its sample deleted there, every gateway row `uploaded`.
    @Test("the server is SIGKILLed mid-drain of health samples and restarted: every sample and tombstone lands exactly once")
    func serverKilledDuringHealthUpload() async throws {
        let directory = try makeTemporaryDirectory("tether-restart-health")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/server.sqlite"
        let serverStore = try SQLiteServerStore(path: database)
        try await serverStore.migrate()
        let token = try await TokenAdministration.issue(store: serverStore, tenant: "home", gateway: "gw-1").reveal
        var server = try await ServerProcess(
            arguments: ["--db", database, "--listen", "127.0.0.1:0", "--inject-faults", "delay:150ms", "--fault-rate", "1"], log: directory + "/server.log")
        let gateway = try GatewayFixture()
        defer { gateway.remove() }
        let health = try HealthGateway(database: gateway.database)
        let uids = try health.ingest(1...3000)
        var tombstones: [String: String] = [:]  // tombstone uid -> sample uid
        for (index, uid) in uids.enumerated() where index % 75 == 0 {
            let change: HealthChange = index % 150 == 0
                ? .deletedByTechnician(sampleUid: uid, note: "test strip")
                : .corrected(sampleUid: uid, replacement: HealthGateway.sample(sequence: Int64(index + 1), milligramsPerDecilitre: 101), by: .technician, note: nil)
            tombstones[try health.apply(change).deletionUid] = uid
        }
        let clock = GatewayClock()
        var configuration = SyncConfiguration(baseURL: "http://127.0.0.1:\(server.port)", token: BearerToken(token))
        configuration.requestTimeout = .seconds(5)
        func uploader(_ client: SyncHTTPClient) -> HealthUploader {
            HealthUploader(
                queue: HealthUploadQueue(database: gateway.database, leaseDuration: .seconds(60)), client: client,
                batchSize: 100, backoff: configuration.backoff, now: clock.read, seed: 9, logger: quietLogger)
        }
        let firstClient = try SyncHTTPClient(configuration: configuration)
        let first = uploader(firstClient)
        let drain = Task {
            var running = first
            return await running.run()
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while try await serverStore.healthSamples(tenant: "home").count < 500, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        server.kill()
        let interrupted = await drain.value
        #expect(interrupted.failure != nil, "the kill ended the run: \(interrupted)")
        let beforeKill = try await serverStore.healthSamples(tenant: "home").count
        #expect(beforeKill >= 500 && beforeKill < 3000 + 20, "killed mid-drain: \(beforeKill)")
        await firstClient.shutdown()

        server = try await ServerProcess(arguments: ["--db", database, "--listen", "127.0.0.1:\(server.port)"], log: directory + "/server.log")
        let secondClient = try SyncHTTPClient(configuration: configuration)
        var second = uploader(secondClient)
        clock.advance(by: .seconds(3600))  // past the failed rows' backoff and any lease
        let reports = await uploadUntilDone(&second, clock: clock)
        await secondClient.shutdown()
        try await server.terminate()
        #expect(reports.last?.failure == nil, "\(reports)")

        let onServer = try await serverStore.healthSamples(tenant: "home")
        let gatewaySamples = try health.store.samples(HealthSampleQuery(includeDeleted: true, limit: 10_000))
        #expect(onServer.count == gatewaySamples.count, "every sample once, corrections' replacements included")
        #expect(Set(onServer.map(\.sample.uid)) == Set(gatewaySamples.map(\.uid)))
        #expect(Set(onServer.map(\.sample.dedupKey)).count == onServer.count, "no reading twice")
        let serverTombstones = try await serverStore.healthDeletions(tenant: "home")
        #expect(Dictionary(uniqueKeysWithValues: serverTombstones.map { ($0.deletion.uid, $0.deletion.sampleUid) }) == tombstones)
        let deletedOnServer = Set(onServer.filter { $0.deletedAt != nil }.map(\.sample.uid))
        #expect(deletedOnServer == Set(tombstones.values))
        let counts = try health.store.uploadCounts()
        #expect(counts.samples == [.uploaded: gatewaySamples.count] && counts.deletions == [.uploaded: tombstones.count], "\(counts)")
    }

    @Test("the gateway dies mid-push and restarts: its leases expire, the push is repeated, the server deduplicates")
    func gatewayRestarted() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(500, devices: 2)
            let queued = try outboxCommands(setup)
            setup.server.faults.enqueue(.delay(.seconds(3)), count: 2, scope: .push)
            let first = try setup.engine { $0.batchSize = 250 }
            let dying = Task { await first.sync(trigger: .manual) }
            // Wait (bounded) until both slowed pushes are on the server.
            let deadline = ContinuousClock.now + .seconds(20)
            while setup.server.faults.injected.count < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            try #require(setup.server.faults.injected.count == 2, "the slowed pushes never reached the server")
            #expect(try setup.outbox.counts().inProgress > 0, "commands are leased to the dying gateway")
            // The restarted gateway: a new database handle and engine, its clock past the old leases.
            let reopened = try setup.gateway.reopen()
            setup.clock.advance(by: .seconds(120))
            let second = try SyncEngine(database: reopened, configuration: setup.configuration(), now: setup.clock.read, seed: 77, logger: quietLogger)
            var reports: [SyncReport] = []
            for _ in 0..<10 {
                reports.append(await second.sync(trigger: .manual))
                setup.clock.advance(by: .seconds(3600))
                if reports.last?.succeeded == true, try Outbox(database: reopened).counts().total == 0 { break }
            }
            let late = await dying.value
            #expect(reports.last?.succeeded == true)
            // The restarted gateway settled every command while the old one's pushes were held on the server: each
            // answer the old one then got found its lease gone.
            #expect(late.push.settled.leasesLost > 0, "the old gateway's answers found their leases gone: \(late)")
            let statistics = try await setup.server.store.statistics(tenant: setup.tenant)
            #expect(statistics.events == 500)
            #expect(statistics.appliedCommands == queued)
            #expect(try Outbox(database: reopened).counts().total == 0)
            await first.shutdown()
            await second.shutdown()
        }
    }
}
