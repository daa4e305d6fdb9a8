import Dispatch
import Foundation
import GRDBSQLite
import LinkProtocol
import TetherStore
import TetherPrimitives

/// Durable ingest with ACK-after-commit through `GroupCommitter`, against the raw sqlite3 baseline measured in
/// the same run, and ACK latency at a paced aggregate rate.
///
/// Closed loop: each simulated device keeps `window` single-event batches in flight (a session with a window of
/// 16 and one HIT_EVENT per notification, the worst case for batching) and submits the next one when a
/// completion (the ACK) comes back. Paced: batches are submitted on a fixed schedule whatever the completions
/// do, and each latency is measured from its scheduled instant, so a stall is charged to every batch it delays.
struct StoreBenchmark {
    var events = 30_000
    var rawEvents = 200_000
    var pacedRate = 5_000
    var pacedSeconds = 5
    var directory: String?
    /// `raw`, `ingest` or `paced`: run only that part.
    var only: String?
    var walAutocheckpointPages: Int?
    /// Whether a background PASSIVE checkpointer runs next to the committer, as in the daemon.
    var backgroundCheckpoints = true
    /// Durable health ingest through HealthStore against raw sqlite3 (`--only health`, or after the rest).
    var health = HealthIngestBenchmark()

    init(arguments: [String]) throws {
        var index = 0
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--events": events = Int(value) ?? events
            case "--raw-events": rawEvents = Int(value) ?? rawEvents
            case "--rate": pacedRate = Int(value) ?? pacedRate
            case "--seconds": pacedSeconds = Int(value) ?? pacedSeconds
            case "--dir": directory = value
            case "--only": only = value
            case "--wal-autocheckpoint": walAutocheckpointPages = Int(value)
            case "--background-checkpoints": backgroundCheckpoints = value != "off"
            case "--health-samples": health.samples = Int(value) ?? health.samples
            case "--health-batch": health.batchSize = Int(value) ?? health.batchSize
            case "--health-streams": health.streams = Int(value) ?? health.streams
            default: throw RawInsertBaseline.Failure(description: "unknown option \(arguments[index])")
            }
            index += 2
        }
        guard events >= 100, rawEvents >= 100, pacedRate >= 5, pacedSeconds >= 1 else {
            throw RawInsertBaseline.Failure(description: "need --events ≥ 100, --raw-events ≥ 100, --rate ≥ 5, --seconds ≥ 1")
        }
    }

    struct Measurement {
        var events: Int
        var elapsed: Duration
        var transactions: Int
        var latencies: [Int64]
        var failures: Int

        var eventsPerSecond: Double { Double(events) / seconds(elapsed) }
        func percentile(_ q: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            return Double(latencies[Int((Double(latencies.count - 1) * q).rounded())]) / 1e6
        }
    }

    func run() throws {
        let root = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("tether-store-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { if directory == nil { try? FileManager.default.removeItem(atPath: root) } }
        var runs = 0
        func freshPath() -> String {
            runs += 1
            return (root as NSString).appendingPathComponent("bench-\(runs).sqlite")
        }

        say("Tether store benchmark: SQLite \(String(cString: sqlite3_libversion())), WAL, \(ProcessInfo.processInfo.activeProcessorCount) cores, files in \(root)")
        say("Every GroupCommitter figure counts an event only when its batch's transaction has committed (the ACK).")
        say("WAL checkpoints: \(backgroundCheckpoints ? "background PASSIVE every 250 ms, writer fallback" : "in the committing connection only") at \(walAutocheckpointPages ?? GatewayDatabase.Configuration().walAutocheckpointPages ?? 1000) pages.")
        say("")

        if only == "health" {
            try health.run(freshPath: freshPath, say: say)
            return
        }
        let rawElapsed = try RawInsertBaseline.run(path: freshPath(), events: rawEvents)
        let rawRate = Double(rawEvents) / seconds(rawElapsed)
        say("raw sqlite3 C API, prepared statements, one transaction: \(rawEvents) events (\(rawEvents * 2) rows) in \(format(seconds(rawElapsed), 3)) s = \(format(rawRate, 0)) events/s")
        say("")

        if only == "raw" { return }
        let header = "devices  window  synchronous   events/s   vs raw   commits  events/commit   ACK p50 ms   ACK p99 ms"
        say(header)
        say(String(repeating: "-", count: header.count))
        let scenarios: [(Int, Int, GatewayDatabase.Configuration.Synchronous)] = [
            (1, 1, .full), (1, 1, .normal),
            (1, 16, .full), (5, 16, .full), (20, 16, .full),
            (1, 16, .normal), (5, 16, .normal), (20, 16, .normal),
        ]
        for (devices, window, synchronous) in scenarios where only == nil || only == "ingest" {
            let count = window == 1 ? min(events, 3_000) : events
            let result = try closedLoop(path: freshPath(), devices: devices, window: window, synchronous: synchronous, events: count)
            say(
                pad(devices, 7) + pad(window, 8) + "  " + synchronous.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)
                    + pad(format(result.eventsPerSecond, 0), 11) + pad(format(result.eventsPerSecond / rawRate * 100, 1) + "%", 9)
                    + pad(result.transactions, 10) + pad(format(Double(result.events) / Double(max(result.transactions, 1)), 1), 15)
                    + pad(format(result.percentile(0.5), 2), 13) + pad(format(result.percentile(0.99), 2), 13)
                    + (result.failures > 0 ? "  (\(result.failures) failed)" : ""))
        }
        say("")

        for synchronous in [GatewayDatabase.Configuration.Synchronous.full, .normal] where only == nil || only == "paced" {
            let result = try paced(path: freshPath(), devices: 5, rate: pacedRate, seconds: pacedSeconds, synchronous: synchronous)
            say(
                "paced \(pacedRate) events/s from 5 devices for \(pacedSeconds) s, synchronous=\(synchronous.rawValue): achieved \(format(result.eventsPerSecond, 0)) events/s, "
                    + "\(result.transactions) commits (\(format(Double(result.events) / Double(max(result.transactions, 1)), 1)) events each), "
                    + "ACK latency p50 \(format(result.percentile(0.5), 2)) ms, p99 \(format(result.percentile(0.99), 2)) ms, max \(format(result.percentile(1), 2)) ms"
                    + (result.failures > 0 ? ", \(result.failures) failed" : ""))
        }
        if only == nil {
            say("")
            try health.run(freshPath: freshPath, say: say)
        }
    }

    // MARK: - Closed loop

    private func closedLoop(path: String, devices: Int, window: Int, synchronous: GatewayDatabase.Configuration.Synchronous, events: Int) throws -> Measurement {
        let (committer, database) = try makeCommitter(path: path, devices: devices, synchronous: synchronous)
        let checkpoints = backgroundCheckpoints ? Task { await database.runCheckpoints() } : nil
        defer { checkpoints?.cancel() }
        let loop = ClosedLoop(committer: committer, devices: devices, perDevice: events / devices)
        let started = ContinuousClock.now
        for device in 0..<devices {
            for _ in 0..<window { loop.submitNext(device) }
        }
        loop.done.wait()
        let elapsed = started.duration(to: .now)
        return Measurement(
            events: loop.total, elapsed: elapsed, transactions: committer.statistics.transactions,
            latencies: loop.latencies.sorted(), failures: loop.failures)
    }

    private final class ClosedLoop: @unchecked Sendable {
        let committer: GroupCommitter
        let perDevice: Int
        let total: Int
        let done = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var next: [Int64]
        private var completed = 0
        private(set) var latencies: [Int64] = []
        private(set) var failures = 0

        init(committer: GroupCommitter, devices: Int, perDevice: Int) {
            self.committer = committer
            self.perDevice = perDevice
            self.total = perDevice * devices
            self.next = Array(repeating: 0, count: devices)
            latencies.reserveCapacity(total)
        }

        func submitNext(_ device: Int) {
            lock.lock()
            let sequence = next[device]
            guard sequence < perDevice else {
                lock.unlock()
                return
            }
            next[device] += 1
            lock.unlock()
            let submitted = DispatchTime.now().uptimeNanoseconds
            let batch = PersistBatch(id: UInt64(sequence), items: [.hit(BenchmarkEvents.hit(serial: "BENCH-\(device)", sequence: sequence, at: WallClock.now()))])
            committer.submit(batch) { [self] result in
                let latency = Int64(DispatchTime.now().uptimeNanoseconds - submitted)
                lock.lock()
                latencies.append(latency)
                completed += 1
                if case .failure = result { failures += 1 }
                let finished = completed == total
                lock.unlock()
                if finished { done.signal() } else { submitNext(device) }
            }
        }
    }

    // MARK: - Paced

    private func paced(path: String, devices: Int, rate: Int, seconds duration: Int, synchronous: GatewayDatabase.Configuration.Synchronous) throws -> Measurement {
        let (committer, database) = try makeCommitter(path: path, devices: devices, synchronous: synchronous)
        let checkpoints = backgroundCheckpoints ? Task { await database.runCheckpoints() } : nil
        defer { checkpoints?.cancel() }
        let total = rate * duration
        let interval = UInt64(1_000_000_000 / rate)
        let state = PacedState(total: total)
        let start = DispatchTime.now().uptimeNanoseconds + 10_000_000
        // The pacer sleeps until the next event is due and then submits every event whose instant has come; it
        // never spins, so it does not take a core from the store.
        let pacer = Thread {
            var index = 0
            while index < total {
                let now = DispatchTime.now().uptimeNanoseconds
                while index < total, start + UInt64(index) * interval <= now {
                    let scheduled = start + UInt64(index) * interval
                    let device = index % devices
                    let batch = PersistBatch(id: UInt64(index), items: [.hit(BenchmarkEvents.hit(serial: "BENCH-\(device)", sequence: Int64(index / devices), at: WallClock.now()))])
                    committer.submit(batch) { result in state.complete(latency: Int64(DispatchTime.now().uptimeNanoseconds - scheduled), failed: (try? result.get()) == nil) }
                    index += 1
                }
                let next = start + UInt64(index) * interval
                let after = DispatchTime.now().uptimeNanoseconds
                if index < total, next > after { usleep(UInt32(min((next - after) / 1000, 1_000_000))) }
            }
        }
        pacer.start()
        state.done.wait()
        let elapsed = Duration.nanoseconds(Int64(state.lastCompletion - start))
        return Measurement(events: total, elapsed: elapsed, transactions: committer.statistics.transactions, latencies: state.latencies.sorted(), failures: state.failures)
    }

    private final class PacedState: @unchecked Sendable {
        let total: Int
        let done = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private(set) var latencies: [Int64] = []
        private(set) var failures = 0
        private(set) var lastCompletion: UInt64 = 0

        init(total: Int) {
            self.total = total
            latencies.reserveCapacity(total)
        }

        func complete(latency: Int64, failed: Bool) {
            lock.lock()
            latencies.append(latency)
            if failed { failures += 1 }
            lastCompletion = DispatchTime.now().uptimeNanoseconds
            let finished = latencies.count == total
            lock.unlock()
            if finished { done.signal() }
        }
    }

    // MARK: - Support

    private func makeCommitter(path: String, devices: Int, synchronous: GatewayDatabase.Configuration.Synchronous) throws -> (GroupCommitter, GatewayDatabase) {
        var configuration = GatewayDatabase.Configuration()
        configuration.synchronous = synchronous
        if let walAutocheckpointPages { configuration.walAutocheckpointPages = walAutocheckpointPages }
        let database = try GatewayDatabase(path: path, configuration: configuration)
        let service = ConsumptionService(database: database)
        var random = SplitMix64(seed: 3)
        for device in 0..<devices {
            _ = try service.apply(
                PersistBatch(id: 0, items: [.deviceInfo(BenchmarkEvents.deviceInfo(serial: "BENCH-\(device)"), negotiatedVersion: 2)]),
                at: WallClock.now(), using: &random)
        }
        return (GroupCommitter(service: service), database)
    }
}

/// One line to stdout, unbuffered: progress shows even when the output goes to a file.
private func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

private func seconds(_ duration: Duration) -> Double { Double(duration.nanoseconds) / 1e9 }

private func format(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

private func pad(_ value: some CustomStringConvertible, _ width: Int) -> String {
    let text = value.description
    return String(repeating: " ", count: max(0, width - text.count)) + text
}
