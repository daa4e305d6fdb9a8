import ArgumentParser
import Logging
import TetherStore

@main
struct SyncBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether-sync-bench",
        abstract: "Drains queued commands or health samples to tether-server on loopback and measures the server's ingest. Build in release, with tether-server.")

    @Option(help: "drain, ingest, all (drain and ingest), health-drain or claim-profile.") var mode = "all"
    @Option(help: "sqlite, postgres or both.") var backend = "both"
    @Option(help: "Commands to drain.") var commands = 1_000_000
    @Option(help: "Devices the events are spread over.") var devices = 16
    @Option(help: "Commands per push.") var batchSize = 1000
    @Option(help: "Pushes in flight.") var concurrency = 2
    @Option(help: "Gateway store durability: full (the shipped setting) or normal.") var gatewaySynchronous = "full"
    @Option(help: "store (TetherStore's Outbox), legacy (the previous session's claim and settle: the baseline) or both (baseline first, then store, with the ratio).")
    var outbox = "store"
    @Option(help: "Concurrent simulated gateways for the ingest run.") var gateways = 10
    @Option(help: "Pushes per simulated gateway.") var ingestBatches = 20
    @Option(help: "Health samples to seed and drain (health-drain).") var samples = 1_000_000
    @Option(help: "Health devices the samples come from, one kind in four: glucose meter, CGM, pulse oximeter, blood pressure cuff.")
    var healthDevices = 40
    @Option(help: "Records per cold-lane commit while seeding (one RACP answer).") var healthRecordsPerBatch = 50
    @Flag(help: "After the health drain, the outbox drain of the same size in the same run, with the ratios.") var compareOutbox = false

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let logger = Logger(label: "tether-sync-bench")
        let backends = backend == "both" ? ["sqlite", "postgres"] : [backend]
        guard let synchronous = GatewayDatabase.Configuration.Synchronous(rawValue: gatewaySynchronous.uppercased()) else {
            throw ValidationError("--gateway-synchronous is full or normal")
        }
        guard ["store", "legacy", "both"].contains(outbox) else { throw ValidationError("--outbox is store, legacy or both") }
        if mode == "claim-profile" {
            try ClaimProfile.run(commands: commands)
            return
        }
        if mode == "health-drain" {
            for kind in backends {
                try await HealthDrainBenchmark.compare(
                    kind,
                    .init(
                        samples: samples, devices: healthDevices, recordsPerBatch: healthRecordsPerBatch, batchSize: batchSize, concurrency: concurrency,
                        gatewaySynchronous: synchronous, compareOutbox: compareOutbox),
                    logger: logger)
            }
            return
        }
        if mode == "drain" || mode == "all" {
            for kind in backends {
                try await DrainBenchmark.compare(
                    kind,
                    .init(commands: commands, devices: devices, batchSize: batchSize, concurrency: concurrency, gatewaySynchronous: synchronous, outbox: outbox),
                    logger: logger)
            }
        }
        if mode == "ingest" || mode == "all" {
            for kind in backends {
                try await IngestBenchmark.run(kind, gateways: gateways, batches: ingestBatches, batchSize: batchSize, logger: logger)
            }
        }
    }
}
