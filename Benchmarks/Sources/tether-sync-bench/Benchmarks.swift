import AsyncHTTPClient
import Foundation
import LinkProtocol
import Logging
import NIOCore
import SyncContract
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting
import GRDB
import TetherPrimitives

/// Where a benchmark's server keeps its data, and the processes whose CPU counts as the server's.
struct BenchBackend {
    var name: String
    var arguments: [String]
    var storage: ServerStorage
    var cluster: PostgresCluster?
    /// The PostgreSQL database the server uses, for reading its tables back (psql).
    var database: String?

    static func make(_ kind: String, directory: String) async throws -> BenchBackend {
        switch kind {
        case "sqlite":
            let path = directory + "/server.sqlite"
            return BenchBackend(name: "sqlite", arguments: ["--db", path], storage: .sqlite(path: path))
        case "postgres":
            let cluster = try await PostgresCluster.start(durable: true)
            let database = try await cluster.createDatabase("tether_bench")
            return BenchBackend(
                name: "postgres", arguments: ["--postgres", cluster.url(database: database)], storage: .postgres(cluster.configuration(database: database)),
                cluster: cluster, database: database)
        default:
            throw ServerChild.Failure(description: "unknown backend \(kind): sqlite or postgres")
        }
    }

    var postmaster: pid_t? {
        guard let cluster, let text = try? String(contentsOfFile: cluster.directory + "/data/postmaster.pid", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    var databaseCPU: Double { postmaster.map(ProcessMeter.clusterCPU) ?? 0 }

    func destroy() { cluster?.destroy() }
}

struct Measurement {
    var wall: Duration
    var gatewayCPU: Double
    var serverCPU: Double
    var databaseCPU: Double

    var wallSeconds: Double { Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18 }
}

enum DrainBenchmark {
    struct Options {
        var commands: Int
        var devices: Int
        var batchSize: Int
        var concurrency: Int
        var gatewaySynchronous: GatewayDatabase.Configuration.Synchronous
        var outbox: String
    }

    /// Drains with each outbox in `options.outbox` ("legacy", "store", or "both": the baseline first, then the
    /// store, each on fresh data and a fresh server) and prints the ratio.
    static func compare(_ backendKind: String, _ options: Options, logger: Logger) async throws {
        let kinds = options.outbox == "both" ? ["legacy", "store"] : [options.outbox]
        var rates: [String: Double] = [:]
        for kind in kinds {
            var single = options
            single.outbox = kind
            rates[kind] = try await run(backendKind, single, logger: logger).rate
        }
        if let legacy = rates["legacy"], let store = rates["store"] {
            print("[\(backendKind)] drain: store / legacy baseline = \(String(format: "%.2f", store / legacy))× the commands/s, same run")
        }
    }

    /// One drain; returns what it cost per command.
    @discardableResult
    static func run(_ backendKind: String, _ options: Options, logger: Logger) async throws -> DrainResult {
        let directory = try makeTemporaryDirectory("tether-bench")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let backend = try await BenchBackend.make(backendKind, directory: directory)
        defer { backend.destroy() }
        let token = try await StoreAccess.with(backend.storage, logger: logger) { store in
            try await TokenAdministration.issue(store: store, tenant: "bench", gateway: "gw-1").reveal
        }
        let server = try await ServerChild(arguments: backend.arguments + ["--listen", "127.0.0.1:0", "--log-level", "warning"], log: directory + "/server.log")
        defer { server.stop() }

        print("[\(backend.name)] storing \(options.commands) events in the gateway (synchronous=\(options.gatewaySynchronous.rawValue))…")
        let setupStart = ContinuousClock.now
        let gateway = try GatewayFixture(synchronous: options.gatewaySynchronous)
        defer { gateway.remove() }
        try gateway.storeEvents(options.commands, devices: options.devices, perBatch: 5000)
        let queued = try Outbox(database: gateway.database).counts().total
        print("[\(backend.name)] \(queued) commands queued in \(setupStart.duration(to: .now))")

        var configuration = SyncConfiguration(baseURL: "http://127.0.0.1:\(server.port)", token: BearerToken(token))
        configuration.batchSize = options.batchSize
        configuration.pushConcurrency = options.concurrency
        configuration.requestTimeout = .seconds(120)
        var database = gateway.database
        let outbox: any SyncOutbox
        if options.outbox == "legacy" {
            try LegacyOutbox.prepare(path: gateway.path)
            database = try gateway.reopen()
            outbox = try LegacyOutbox(database: database, path: gateway.path)
        } else {
            outbox = StoreOutbox(outbox: Outbox(database: database), seed: 1)
        }
        let engine = try SyncEngine(database: database, configuration: configuration, outbox: outbox, seed: 1, logger: logger)

        let gatewayBefore = ProcessMeter.selfCPU()
        let serverBefore = server.cpuSeconds
        let databaseBefore = backend.databaseCPU
        let started = ContinuousClock.now
        var report = await engine.sync(trigger: .manual)
        var syncs = 1
        while report.succeeded, try Outbox(database: gateway.database).counts().total > 0, syncs < 5 {
            report = await engine.sync(trigger: .manual)
            syncs += 1
        }
        let measurement = Measurement(
            wall: started.duration(to: .now), gatewayCPU: ProcessMeter.selfCPU() - gatewayBefore, serverCPU: server.cpuSeconds - serverBefore,
            databaseCPU: backend.databaseCPU - databaseBefore)
        await engine.shutdown()
        if let failure = report.failure { print("[\(backend.name)] sync failed: \(failure)") }

        let statistics = try await StoreAccess.with(backend.storage, logger: logger) { store in try await store.statistics(tenant: "bench") }
        let left = try Outbox(database: gateway.database).counts().total
        let rate = Double(queued - left) / measurement.wallSeconds
        print("""
            [\(backend.name)] drain of \(queued) commands (outbox: \(options.outbox), batch \(options.batchSize), \(options.concurrency) in flight, gateway synchronous=\(options.gatewaySynchronous.rawValue))
              wall            \(String(format: "%.1f", measurement.wallSeconds)) s  (\(syncs) sync\(syncs == 1 ? "" : "s"))
              throughput      \(String(format: "%.0f", rate)) commands/s
              gateway CPU     \(String(format: "%.1f", measurement.gatewayCPU)) s  (\(String(format: "%.0f", 100 * measurement.gatewayCPU / measurement.wallSeconds))% of one core; \(String(format: "%.1f", 1e6 * measurement.gatewayCPU / Double(max(1, queued)))) µs/command)
              server CPU      \(String(format: "%.1f", measurement.serverCPU)) s  (\(String(format: "%.1f", 1e6 * measurement.serverCPU / Double(max(1, queued)))) µs/command)
            \(backend.cluster == nil ? "" : "  postgres CPU    \(String(format: "%.1f", measurement.databaseCPU)) s\n")  gateway time    claiming \(report.push.claimTime), encoding \(report.push.encodeTime), settling \(report.push.settleTime) (the rest: waiting for the server)
              pushed          \(report.push.batches) batches, \(report.push.applied) applied, \(report.push.duplicates) duplicates in the last sync
              server holds    \(statistics.events) events, \(statistics.appliedCommands) applied commands; gateway outbox left \(left)
              exactly once    \(statistics.appliedCommands == queued && left == 0 ? "yes" : "NO")
            """)
        return DrainResult(items: queued - left, measurement: measurement)
    }
}

enum IngestBenchmark {
    static func run(_ backendKind: String, gateways: Int, batches: Int, batchSize: Int, logger: Logger) async throws {
        let directory = try makeTemporaryDirectory("tether-ingest")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let backend = try await BenchBackend.make(backendKind, directory: directory)
        defer { backend.destroy() }
        let tokens = try await StoreAccess.with(backend.storage, logger: logger) { store in
            var tokens: [String] = []
            for index in 0..<gateways { tokens.append(try await TokenAdministration.issue(store: store, tenant: "home-\(index)", gateway: "gw").reveal) }
            return tokens
        }
        let server = try await ServerChild(arguments: backend.arguments + ["--listen", "127.0.0.1:0", "--log-level", "warning"], log: directory + "/server.log")
        defer { server.stop() }
        // Bodies are built before the clock starts: this measures the server, not the load generator.
        let bodies: [[[UInt8]]] = (0..<gateways).map { gateway in
            (0..<batches).map { batch in
                var writer = PushRequestWriter(reservingCapacity: batchSize * 330)
                for index in 0..<batchSize {
                    let sequence = Int64(batch * batchSize + index)
                    let serial = "G\(gateway)-D\(index % 8)"
                    let payload = #"{"serial":"\#(serial)","bootCounter":1,"sequence":\#(sequence),"ticks":\#(1000 * (sequence + 1)),"utcNanoseconds":null,"uncertaintyNanoseconds":null,"durationMilliseconds":800,"intensity":40,"receivedAt":\#(1_793_520_000_000_000_000 + sequence)}"#
                    writer.append(id: UUID(), entityType: "consumptionEvent", entityID: "\(serial)/1/\(sequence)", operation: "create", payloadJSON: payload)
                }
                return writer.finish()
            }
        }
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(timeout: .init(connect: .seconds(5), read: .seconds(120))))
        let serverBefore = server.cpuSeconds
        let databaseBefore = backend.databaseCPU
        let started = ContinuousClock.now
        let url = "http://127.0.0.1:\(server.port)" + SyncAPI.pushPath
        let applied = try await withThrowingTaskGroup(of: Int.self) { group in
            for gateway in 0..<gateways {
                let token = tokens[gateway]
                let mine = bodies[gateway]
                group.addTask {
                    var applied = 0
                    for body in mine {
                        var request = HTTPClientRequest(url: url)
                        request.method = .POST
                        request.headers.add(name: "Authorization", value: "Bearer \(token)")
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(ByteBuffer(bytes: body))
                        let response = try await client.execute(request, timeout: .seconds(120))
                        let answer = try await response.body.collect(upTo: 16 << 20)
                        guard response.status == .ok else { throw ServerChild.Failure(description: "HTTP \(response.status.code)") }
                        applied += try JSONDecoder().decode(PushResponse.self, from: Data(answer.readableBytesView)).results.filter { $0.status == .applied }.count
                    }
                    return applied
                }
            }
            return try await group.reduce(0, +)
        }
        let wall = started.duration(to: .now)
        let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        try await client.shutdown()
        let total = gateways * batches * batchSize
        print("""
            [\(backend.name)] ingest: \(gateways) concurrent gateways (one tenant each) × \(batches) pushes × \(batchSize) commands = \(total)
              wall            \(String(format: "%.1f", seconds)) s
              ingest rate     \(String(format: "%.0f", Double(applied) / seconds)) commands/s (\(applied) applied)
              server CPU      \(String(format: "%.1f", server.cpuSeconds - serverBefore)) s
            \(backend.cluster == nil ? "" : "  postgres CPU    \(String(format: "%.1f", backend.databaseCPU - databaseBefore)) s\n")
            """)
    }
}

/// Where the gateway's time goes when it claims: the store's claim against the same query run raw.
enum ClaimProfile {
    static func run(commands: Int) throws {
        let gateway = try GatewayFixture()
        defer { gateway.remove() }
        try gateway.storeEvents(commands, devices: 16, perBatch: 5000)
        let database = gateway.database
        let raw = try GRDB.DatabaseQueue(path: gateway.path)
        let plan = try raw.read { db in
            try Row.fetchAll(db, sql: """
                EXPLAIN QUERY PLAN SELECT * FROM outboxCommand AS o INDEXED BY outboxCommandReady
                WHERE o.status IN ('pending', 'failed') AND o.nextAttemptAt <= ?
                  AND NOT EXISTS (SELECT 1 FROM outboxCommand AS p WHERE p.entityType = o.entityType AND p.entityId = o.entityId AND p.seq < o.seq)
                ORDER BY o.seq LIMIT ?
                """, arguments: [Int64.max, 1000]).map { $0["detail"] as String? ?? "" }.joined(separator: " | ")
        }
        print("plan on a fresh connection: \(plan)")
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 1)
        for round in 0..<5 {
            let started = ContinuousClock.now
            let leases = try outbox.claim(limit: 1000, now: WallClock.now(), using: &random)
            let claimed = started.duration(to: .now)
            let completing = ContinuousClock.now
            for lease in leases.prefix(100) { try outbox.complete(lease, now: WallClock.now()) }
            print("round \(round): claim of \(leases.count) took \(claimed); 100 single completes took \(completing.duration(to: .now))")
        }
    }
}
