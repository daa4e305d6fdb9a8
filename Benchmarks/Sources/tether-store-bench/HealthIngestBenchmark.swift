import Dispatch
import Foundation
import TetherStore
import TetherPrimitives

/// Durable health ingest (issue 14, item 8): samples/s through `HealthStore` and the shared `GroupCommitter`, each
/// batch's samples and cursor in one transaction with ACK-after-commit, against `RawHealthBaseline` writing the same
/// batches with the same durability and batch size in the same run.
///
/// Closed loop: each stream (a glucose meter's cold lane) keeps one batch in flight and submits the next when the
/// completion comes back, as the lane does (the RACP transfer continues only once the batch is durable).
struct HealthIngestBenchmark {
    var samples = 32_000
    /// Samples per batch (two per record).
    var batchSize = 32
    var streams = 8

    static let characteristic = "00002a18-0000-1000-8000-00805f9b34fb"

    func run(freshPath: () -> String, say: (String) -> Void) throws {
        guard batchSize >= 2, batchSize % 2 == 0, samples >= batchSize * streams else {
            throw RawInsertBaseline.Failure(description: "need an even --health-batch ≥ 2 and --health-samples ≥ batch × streams")
        }
        say("Health ingest: \(batchSize) samples (\(batchSize / 2) glucose records) and a cursor move per batch, WAL, synchronous=FULL.")
        let batchCount = samples / batchSize

        let rawPath = freshPath()
        let rawUid = try Self.prepare(path: rawPath, streams: 1)[0]
        let rawBatches = Self.batches(peripheralUid: rawUid, count: batchCount, batchSize: batchSize)
        let rawElapsed = try RawHealthBaseline.run(path: rawPath, peripheralUid: rawUid, batches: rawBatches)
        let rawRate = Double(batchCount * batchSize) / seconds(rawElapsed)
        say("raw sqlite3 C API, one transaction per batch: \(batchCount * batchSize) samples in \(batchCount) commits, \(format(seconds(rawElapsed), 3)) s = \(format(rawRate, 0)) samples/s")

        let header = "streams  in flight   samples/s   vs raw   commits  samples/commit"
        say(header)
        say(String(repeating: "-", count: header.count))
        for streamCount in [1, streams] {
            let result = try closedLoop(path: freshPath(), streams: streamCount, batchesPerStream: batchCount / streamCount)
            let rate = Double(result.samples) / seconds(result.elapsed)
            say(
                pad(streamCount, 7) + pad(streamCount, 11) + pad(format(rate, 0), 12) + pad(format(rate / rawRate, 2) + "×", 9)
                    + pad(result.transactions, 9) + pad(format(Double(result.samples) / Double(max(result.transactions, 1)), 1), 16)
                    + (result.failures > 0 ? "  (\(result.failures) failed)" : ""))
        }
    }

    struct Result {
        var samples: Int
        var elapsed: Duration
        var transactions: Int
        var failures: Int
    }

    private func closedLoop(path: String, streams: Int, batchesPerStream: Int) throws -> Result {
        let uids = try Self.prepare(path: path, streams: streams)
        let database = try GatewayDatabase(path: path)
        let committer = GroupCommitter(service: ConsumptionService(database: database))
        let store = HealthStore(database: database)
        let checkpoints = Task { await database.runCheckpoints() }
        defer { checkpoints.cancel() }
        let work = uids.map { Self.batches(peripheralUid: $0, count: batchesPerStream, batchSize: batchSize) }
        let loop = Loop(store: store, committer: committer, work: work)
        let started = ContinuousClock.now
        for stream in 0..<streams { loop.submitNext(stream) }
        loop.done.wait()
        let elapsed = started.duration(to: .now)
        return Result(samples: batchesPerStream * streams * batchSize, elapsed: elapsed, transactions: committer.statistics.transactions, failures: loop.failures)
    }

    private final class Loop: @unchecked Sendable {
        let store: HealthStore
        let committer: GroupCommitter
        let work: [[HealthIngestBatch]]
        let done = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var next: [Int]
        private var remaining: Int
        private(set) var failures = 0

        init(store: HealthStore, committer: GroupCommitter, work: [[HealthIngestBatch]]) {
            self.store = store
            self.committer = committer
            self.work = work
            next = Array(repeating: 0, count: work.count)
            remaining = work.map(\.count).reduce(0, +)
        }

        func submitNext(_ stream: Int) {
            lock.lock()
            let index = next[stream]
            next[stream] += 1
            lock.unlock()
            guard index < work[stream].count else { return }
            store.submit(work[stream][index], to: committer) { [self] result in
                lock.lock()
                if case .failure = result { failures += 1 }
                remaining -= 1
                let finished = remaining == 0
                lock.unlock()
                if finished { done.signal() } else { submitNext(stream) }
            }
        }
    }

    /// A fresh database with `streams` registered peripherals; their uids.
    static func prepare(path: String, streams: Int) throws -> [String] {
        let database = try GatewayDatabase(path: path)
        let registry = PeripheralRegistry(database: database)
        var random = SplitMix64(seed: 9)
        return try (0..<streams).map { index in
            try registry.register(identityAddress: String(format: "C4:00:00:00:%02X:%02X", index / 256, index % 256), at: WallClock.now(), using: &random).uid
        }
    }

    /// Consecutive cold-lane batches of one glucose meter: records 1, 2, … with two samples each.
    static func batches(peripheralUid: String, count: Int, batchSize: Int) -> [HealthIngestBatch] {
        let records = Int64(batchSize / 2)
        let start = Timestamp(nanoseconds: 1_793_520_000_000_000_000)
        return (0..<Int64(count)).map { batch in
            let first = batch * records + 1
            let samples = (first..<(first + records)).flatMap { record in
                [160_368, 160_369].map { metric in
                    let value = 60 + record % 200
                    let at = start.advanced(by: .seconds(record * 60))
                    return HealthSample(
                        metricCode: metric,
                        value: .number(HealthDecimal(mantissa: value, exponent: -5), unit: "kg/L", canonical: HealthDecimal(mantissa: value, exponent: 0), unit: "mg/dL"),
                        effectiveAt: at, deviceTime: "2026-11-01T08:00:00+01:00 record \(record)", timeBasis: .clockSetByGateway, skewMilliseconds: 840,
                        recordSequence: record, lane: .cold, characteristic: characteristic,
                        rawBytes: [0x1B, UInt8(truncatingIfNeeded: record), UInt8(truncatingIfNeeded: record >> 8), 0xEA, 0x07, 0x0B, 0x01, 0x08, 0x00, 0x00, 0x64, 0xB0, 0xF8, 0x00],
                        parserVersion: 1, receivedAt: WallClock.now())
                }
            }
            return HealthIngestBatch(
                peripheralUid: peripheralUid, samples: samples,
                cursor: HealthCursorMove(stream: HealthRecordStream(characteristic: characteristic), epoch: 0, position: first + records - 1))
        }
    }
}

private func seconds(_ duration: Duration) -> Double { Double(duration.nanoseconds) / 1e9 }

private func format(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

private func pad(_ value: some CustomStringConvertible, _ width: Int) -> String {
    let text = value.description
    return String(repeating: " ", count: max(0, width - text.count)) + text
}
