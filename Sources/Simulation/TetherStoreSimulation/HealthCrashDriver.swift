import Foundation
import TetherPrimitives
import TetherStore

/// The driver half of the health crash test (issue 14, item 7: "a kill between samples and cursor leaves
/// neither"). It runs `tether-store-crashtest health-gateway` on one database file, SIGKILLs it again and again, and
/// after every kill, with no child running, checks the file:
///
/// - every batch the child reported committed (`H`) is there in full: its cursor is at least where it moved, and
///   every record it carried, in its epoch;
/// - nothing is partial: in every epoch of every stream the stored samples are exactly records 1…cursor, each with
///   every metric once and the value `HealthCrashPlan` says; no sample beyond its cursor, no cursor beyond its
///   samples; epochs run 0, 1, 2, … with nothing skipped;
/// - a batch the child paused between its samples and its cursor (`P`, every other life) left neither.
///
/// Half the lives end at a random instant (the kill lands wherever the child is: mid-group, mid-fsync, idle); the
/// other half end exactly between a batch's sample inserts and its cursor write, inside the open transaction.
public struct HealthCrashDriver {
    public struct Configuration: Sendable {
        public var executable: String
        public var databasePath: String
        public var logPath: String
        public var seed: UInt64 = 1
        public var kills = 20
        public var plan = HealthCrashPlan()
        /// Lifetime of a child killed at a random instant (milliseconds).
        public var lifetimeMilliseconds: ClosedRange<Int64> = 20...250
        public var startTimeout: Duration = .seconds(30)
        /// How long a paused life may take to reach its pause before that is a violation.
        public var pauseTimeout: Duration = .seconds(30)
        public var progress: (@Sendable (String) -> Void)?

        public init(executable: String, databasePath: String, logPath: String) {
            self.executable = executable
            self.databasePath = databasePath
            self.logPath = logPath
        }
    }

    public struct Report: Sendable, CustomStringConvertible {
        public var kills = 0
        public var pausedKills = 0
        public var batchesReported = 0
        public var duplicatesReported = 0
        public var samplesStored = 0
        public var epochsStarted = 0
        public var verifications = 0
        public var violations: [String] = []

        public var description: String {
            "\(kills) kills (\(pausedKills) between samples and cursor), \(batchesReported) batches reported committed, "
                + "\(duplicatesReported) duplicates reported, \(samplesStored) samples stored, \(epochsStarted) epochs, "
                + "\(verifications) verifications, \(violations.count) violations"
        }
    }

    struct Committed: Hashable {
        var stream: Int
        var epoch: Int64
        var through: Int64
    }

    public static func run(_ configuration: Configuration) -> Report {
        signal(SIGPIPE, SIG_IGN)
        var report = Report()
        var random = SplitMix64(seed: configuration.seed)
        var committed: [Committed] = []
        for life in 0...configuration.kills {
            let final = life == configuration.kills
            let pauseAt = !final && life % 2 == 1 ? Int.random(in: 1...(3 * configuration.plan.streams), using: &random) : nil
            var arguments = [
                "health-gateway", "--db", configuration.databasePath, "--streams", String(configuration.plan.streams),
                "--records-per-batch", String(configuration.plan.recordsPerBatch), "--records-per-epoch", String(configuration.plan.recordsPerEpoch),
            ]
            if let pauseAt { arguments += ["--pause-at", String(pauseAt)] }
            let child: GatewayProcess
            do {
                child = try GatewayProcess(executable: configuration.executable, databasePath: configuration.databasePath, logPath: configuration.logPath, arguments: arguments)
            } catch {
                report.violations.append("cannot start the child: \(error)")
                return report
            }
            var paused: Committed?
            var ready = false
            let lifetime = Int64.random(in: configuration.lifetimeMilliseconds, using: &random)
            let started = WallClock.now()
            var deadline = started.advanced(by: configuration.startTimeout)
            lines: while true {
                let now = WallClock.now()
                if now >= deadline {
                    if !ready { report.violations.append("the child was not ready within \(configuration.startTimeout)") }
                    else if pauseAt != nil { report.violations.append("the child never reached batch \(pauseAt ?? 0) to pause") }
                    break
                }
                guard let lines = child.readLines(timeoutMilliseconds: Int32(max(1, min(20, (deadline.nanoseconds - now.nanoseconds) / 1_000_000)))) else {
                    report.violations.append("the child exited on its own (see \(configuration.logPath))")
                    break
                }
                for line in lines {
                    let fields = line.split(separator: " ")
                    switch fields.first {
                    case "ready":
                        ready = true
                        let at = WallClock.now()
                        deadline = pauseAt != nil ? at.advanced(by: configuration.pauseTimeout) : at.advanced(by: .milliseconds(final ? 1_500 : lifetime))
                    case "H" where fields.count == 6:
                        if let stream = Int(fields[1]), let epoch = Int64(fields[2]), let through = Int64(fields[3]), let duplicates = Int(fields[5]) {
                            committed.append(Committed(stream: stream, epoch: epoch, through: through))
                            report.batchesReported += 1
                            report.duplicatesReported += duplicates
                        } else {
                            report.violations.append("unexpected line from the child: \(line)")
                        }
                    case "P" where fields.count == 4:
                        if let stream = Int(fields[1]), let epoch = Int64(fields[2]), let through = Int64(fields[3]) {
                            paused = Committed(stream: stream, epoch: epoch, through: through)
                            break lines
                        }
                        report.violations.append("unexpected line from the child: \(line)")
                    default:
                        report.violations.append("unexpected line from the child: \(line)")
                    }
                }
            }
            if final {
                child.stop()
            } else {
                child.kill()
                report.kills += 1
                if paused != nil { report.pausedKills += 1 }
            }
            verify(configuration, committed: committed, paused: paused, final: final, report: &report)
            if life % 10 == 9 { configuration.progress?("life \(life + 1): \(report)") }
            if !report.violations.isEmpty { return report }
        }
        return report
    }

    /// The checks listed on the type, on the file as the kill left it.
    private static func verify(_ configuration: Configuration, committed: [Committed], paused: Committed?, final: Bool, report: inout Report) {
        report.verifications += 1
        let plan = configuration.plan
        func fail(_ text: String) { report.violations.append("after kill \(report.kills): \(text)") }
        do {
            let database = try GatewayDatabase(path: configuration.databasePath)
            let problems = try database.integrityProblems()
            if !problems.isEmpty { fail("integrity: \(problems.prefix(5))") }
            let store = HealthStore(database: database)
            let registry = PeripheralRegistry(database: database)
            var stored = 0
            var epochsStarted = 0
            for index in 0..<plan.streams {
                guard let uid = try registry.peripheral(identityAddress: HealthCrashPlan.address(stream: index))?.uid else { continue }
                let epochs = try store.epochs(peripheralUid: uid, stream: plan.stream)
                epochsStarted += epochs.count
                if epochs.map(\.epoch) != Array(0..<Int64(epochs.count)) { fail("stream \(index) has epochs \(epochs.map(\.epoch))") }
                let positions = Dictionary(uniqueKeysWithValues: epochs.map { ($0.epoch, $0.position ?? 0) })
                // Every row, checked against the plan and its epoch's cursor.
                var seen: [Int64: Set<Int64>] = [:]
                var rows: [Int64: Int] = [:]
                for record in try store.samples(HealthSampleQuery(peripheralUid: uid, includeDeleted: true, limit: Int.max)) {
                    let sample = record.sample
                    guard let sequence = sample.recordSequence else {
                        fail("stream \(index): a sample without a sequence")
                        continue
                    }
                    stored += 1
                    rows[sample.epoch, default: 0] += 1
                    seen[sample.epoch, default: []].insert(sequence)
                    let expected = HealthCrashPlan.sample(stream: index, epoch: sample.epoch, record: sequence, metric: sample.metricCode)
                    if sample != expected { fail("stream \(index) epoch \(sample.epoch) record \(sequence) metric \(sample.metricCode) is not what was sent") }
                }
                for epoch in Set(positions.keys).union(seen.keys) {
                    let through = positions[epoch] ?? 0
                    let records = seen[epoch] ?? []
                    if positions[epoch] == nil { fail("stream \(index) has samples in epoch \(epoch), which has no cursor") }
                    if records != Set(through > 0 ? Array(1...through) : []) {
                        fail("stream \(index) epoch \(epoch): cursor at \(through) but records \(records.sorted().prefix(3))…\(records.max() ?? 0) (\(records.count)) stored")
                    }
                    if rows[epoch, default: 0] != records.count * HealthCrashPlan.metrics.count {
                        fail("stream \(index) epoch \(epoch): \(rows[epoch, default: 0]) samples for \(records.count) records")
                    }
                }
                for batch in committed where batch.stream == index {
                    let latest = epochs.last?.epoch ?? -1
                    if batch.epoch > latest || (batch.epoch == latest && (positions[batch.epoch] ?? 0) < batch.through) || positions[batch.epoch] == nil {
                        fail("stream \(index): a batch reported committed (epoch \(batch.epoch) through \(batch.through)) is not there")
                    }
                }
                if let paused, paused.stream == index, let position = positions[paused.epoch], position >= paused.through {
                    fail("stream \(index): the batch killed between samples and cursor (epoch \(paused.epoch) through \(paused.through)) committed")
                }
            }
            if final || report.violations.isEmpty {
                report.samplesStored = stored
                report.epochsStarted = epochsStarted
            }
        } catch {
            fail("cannot read the database: \(error)")
        }
    }
}
