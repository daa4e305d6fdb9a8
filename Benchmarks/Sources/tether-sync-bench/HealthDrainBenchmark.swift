import Foundation
import GRDB
import Logging
import SyncContract
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting
import TetherPrimitives

/// The health upload drain (issue 15, item 5): N samples seeded through `HealthStore` (`HealthSeed`), then drained
/// by the daemon's own sync (`SyncEngine.sync`, whose health phase is `HealthUploader` over `HealthUploadQueue`) to
/// tether-server in its own process over loopback HTTP, on SQLite or PostgreSQL. With `compareOutbox`, the outbox
/// drain of the same size (`DrainBenchmark`, fresh gateway, fresh server) runs after it in the same process, and the
/// ratios are printed.
enum HealthDrainBenchmark {
    struct Options {
        var samples: Int
        var devices: Int
        var recordsPerBatch: Int
        var batchSize: Int
        var concurrency: Int
        var gatewaySynchronous: GatewayDatabase.Configuration.Synchronous
        var compareOutbox: Bool
    }

    static func compare(_ backendKind: String, _ options: Options, logger: Logger) async throws {
        let health = try await run(backendKind, options, logger: logger)
        guard options.compareOutbox else { return }
        let outbox = try await DrainBenchmark.run(
            backendKind,
            .init(
                commands: health.items, devices: 16, batchSize: options.batchSize, concurrency: options.concurrency,
                gatewaySynchronous: options.gatewaySynchronous, outbox: "store"),
            logger: logger)
        func ratio(_ a: Double, _ b: Double) -> String { b > 0 ? String(format: "%.2f", a / b) + "×" : "—" }
        print("""
            [\(backendKind)] health drain / outbox drain of the same size, same run:
              items/s            \(ratio(health.rate, outbox.rate))  (\(String(format: "%.0f", health.rate)) samples/s against \(String(format: "%.0f", outbox.rate)) commands/s)
              wall               \(ratio(health.wallSeconds, outbox.wallSeconds))
              gateway CPU/item   \(ratio(health.gatewayMicroseconds, outbox.gatewayMicroseconds))  (\(String(format: "%.1f", health.gatewayMicroseconds)) µs against \(String(format: "%.1f", outbox.gatewayMicroseconds)) µs)
              server CPU/item    \(ratio(health.serverMicroseconds, outbox.serverMicroseconds))  (\(String(format: "%.1f", health.serverMicroseconds)) µs against \(String(format: "%.1f", outbox.serverMicroseconds)) µs)
            \(health.databaseCPU > 0 ? "  postgres CPU/item  \(ratio(health.databaseMicroseconds, outbox.databaseMicroseconds))  (\(String(format: "%.1f", health.databaseMicroseconds)) µs against \(String(format: "%.1f", outbox.databaseMicroseconds)) µs)\n" : "")
            """)
    }

    static func run(_ backendKind: String, _ options: Options, logger: Logger) async throws -> DrainResult {
        let directory = try makeTemporaryDirectory("tether-health-bench")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let backend = try await BenchBackend.make(backendKind, directory: directory)
        defer { backend.destroy() }
        let tenant = "bench"
        let token = try await StoreAccess.with(backend.storage, logger: logger) { store in
            try await TokenAdministration.issue(store: store, tenant: tenant, gateway: "gw-1").reveal
        }
        let server = try await ServerChild(arguments: backend.arguments + ["--listen", "127.0.0.1:0", "--log-level", "warning"], log: directory + "/server.log")
        defer { server.stop() }

        let seed = HealthSeed(count: options.samples, devices: options.devices, recordsPerBatch: options.recordsPerBatch)
        try seed.validate()
        print("[\(backend.name)] storing \(options.samples) health samples from \(options.devices) devices in the gateway (synchronous=\(options.gatewaySynchronous.rawValue))…")
        let gateway = try GatewayFixture(synchronous: options.gatewaySynchronous)
        defer { gateway.remove() }
        let seedStart = ContinuousClock.now
        let seeded = try await seed.run(database: gateway.database)
        let seedWall = seedStart.duration(to: .now)
        let queue = HealthUploadQueue(database: gateway.database)
        let queued = try queue.backlog().samples[.pending] ?? 0
        print("[\(backend.name)] \(queued) samples pending upload, stored in \(seedWall) (\(seeded.batches) batches in \(seeded.transactions) group commits, \(seeded.duplicates) duplicates)")

        var configuration = SyncConfiguration(baseURL: "http://127.0.0.1:\(server.port)", token: BearerToken(token))
        configuration.batchSize = options.batchSize
        configuration.pushConcurrency = options.concurrency
        configuration.requestTimeout = .seconds(120)
        let engine = try SyncEngine(database: gateway.database, configuration: configuration, seed: 1, logger: logger)

        let gatewayBefore = ProcessMeter.selfCPU()
        let serverBefore = server.cpuSeconds
        let databaseBefore = backend.databaseCPU
        let started = ContinuousClock.now
        var health = HealthUploadReport()
        var syncs = 0
        var failure: String?
        repeat {
            let report = await engine.sync(trigger: .manual)
            syncs += 1
            health.samples.applied += report.health.samples.applied
            health.samples.duplicate += report.health.samples.duplicate
            health.samples.rejected += report.health.samples.rejected
            health.samples.failed += report.health.samples.failed
            health.samples.notHeld += report.health.samples.notHeld
            health.requests += report.health.requests
            if let problem = report.health.failure ?? report.failure {
                failure = "\(problem)"
                break
            }
        } while try queue.backlog().samples.values.reduce(0, +) > 0 && syncs < 5
        let wall = started.duration(to: .now)
        let measurement = Measurement(
            wall: wall, gatewayCPU: ProcessMeter.selfCPU() - gatewayBefore, serverCPU: server.cpuSeconds - serverBefore,
            databaseCPU: backend.databaseCPU - databaseBefore)
        await engine.shutdown()
        if let failure { print("[\(backend.name)] health upload failed: \(failure)") }

        // Verification, after the clock: the server's rows by uid against the gateway's, and the gateway's states.
        let gatewayUIDs = try await DatabaseQueue(path: gateway.path, configuration: readOnly()).read { db in
            try String.fetchAll(db, sql: "SELECT uid FROM healthSample")
        }
        let gatewayStates = try await DatabaseQueue(path: gateway.path, configuration: readOnly()).read { db in
            try Row.fetchAll(db, sql: "SELECT uploadState, COUNT(*) AS n FROM healthSample GROUP BY uploadState").map { "\($0["uploadState"] as String) \($0["n"] as Int)" }
        }
        let serverUIDs = try await serverSampleUIDs(backend, directory: directory, tenant: tenant)
        let left = try queue.backlog().samples.values.reduce(0, +)
        let distinct = Set(serverUIDs)
        let exact = serverUIDs.count == queued && distinct.count == queued && distinct == Set(gatewayUIDs) && left == 0
        let result = DrainResult(items: queued, measurement: measurement)
        print("""
            [\(backend.name)] health drain of \(queued) samples (batch \(options.batchSize), one request in flight, gateway synchronous=\(options.gatewaySynchronous.rawValue))
              seed            \(String(format: "%.1f", seconds(seedWall))) s  (\(String(format: "%.0f", Double(seeded.stored) / seconds(seedWall))) samples/s through HealthStore and the group commit)
              wall            \(String(format: "%.1f", result.wallSeconds)) s  (\(syncs) sync\(syncs == 1 ? "" : "s"), \(health.requests) requests)
              throughput      \(String(format: "%.0f", result.rate)) samples/s
              gateway CPU     \(String(format: "%.1f", measurement.gatewayCPU)) s  (\(String(format: "%.0f", 100 * measurement.gatewayCPU / result.wallSeconds))% of one core; \(String(format: "%.1f", result.gatewayMicroseconds)) µs/sample)
              server CPU      \(String(format: "%.1f", measurement.serverCPU)) s  (\(String(format: "%.1f", result.serverMicroseconds)) µs/sample)
            \(backend.cluster == nil ? "" : "  postgres CPU    \(String(format: "%.1f", measurement.databaseCPU)) s  (\(String(format: "%.1f", result.databaseMicroseconds)) µs/sample)\n")  answers         \(health.samples.applied) applied, \(health.samples.duplicate) duplicate, \(health.samples.rejected) rejected, \(health.samples.failed) failed, \(health.samples.notHeld) not held
              server holds    \(serverUIDs.count) samples, \(distinct.count) distinct uids; gateway: \(gatewayStates.joined(separator: ", ")), \(left) left to upload
              exactly once    \(exact ? "yes" : "NO")
            """)
        guard exact else { throw ServerChild.Failure(description: "the health drain did not put every sample on the server exactly once") }
        return result
    }

    private static func readOnly() -> GRDB.Configuration {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        return configuration
    }

    /// Every uid of the tenant's samples as the server's own database holds them (one per row).
    private static func serverSampleUIDs(_ backend: BenchBackend, directory: String, tenant: String) async throws -> [String] {
        if let cluster = backend.cluster, let database = backend.database {
            let text = try await cluster.psql(database: database, "SELECT uid FROM health_sample WHERE tenant = '\(tenant)'")
            return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        return try await DatabaseQueue(path: directory + "/server.sqlite", configuration: readOnly()).read { db in
            try String.fetchAll(db, sql: "SELECT uid FROM health_sample WHERE tenant = ?", arguments: [tenant])
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// What one drain cost, per item (a health sample, or an outbox command).
struct DrainResult {
    var items: Int
    var measurement: Measurement

    var wallSeconds: Double { measurement.wallSeconds }
    var rate: Double { Double(items) / max(wallSeconds, 1e-9) }
    var gatewayMicroseconds: Double { 1e6 * measurement.gatewayCPU / Double(max(1, items)) }
    var serverMicroseconds: Double { 1e6 * measurement.serverCPU / Double(max(1, items)) }
    var databaseMicroseconds: Double { 1e6 * measurement.databaseCPU / Double(max(1, items)) }
    var databaseCPU: Double { measurement.databaseCPU }
}
