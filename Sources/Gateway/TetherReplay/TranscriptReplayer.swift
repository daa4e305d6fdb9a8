import LinkProtocol
import TetherPrimitives

/// Drives a transcript's device-to-gateway values through a real `LinkSession` at their recorded times, with
/// the recording's store latency and the session's own timers, and reports the outcome.
///
/// The replay is open-loop: the device bytes are fixed, the gateway's answers are recomputed. A codec or session
/// change that treats an old firmware's bytes differently changes the outcome, and the fixtures' expected files
/// catch it.
public struct TranscriptReplayer {
    /// Extra durable storage a replay writes through (a real database for `tether replay --db`). It returns
    /// `false` when it could not store the batch, which the session hears as `storageFull` (§8.10).
    public typealias Sink = (PersistBatch) -> Bool

    public let transcript: Transcript
    public let name: String
    public var configuration = LinkSessionConfiguration()
    /// The settings the recording's gateway wanted the device to have (it sent SET_CONFIG for them). Not part of
    /// the transcript format yet; without it a replay sends no SET_CONFIG and its writes differ from the `G>D`
    /// lines, although what it stores is the same (the device's CONFIG_DATA is in the `D>G` bytes either way).
    public var desiredConfig: DeviceConfig?

    public init(transcript: Transcript, name: String) {
        self.transcript = transcript
        self.name = name
    }

    public func replay(sink: Sink? = nil) -> ReplayOutcome {
        replayRecordingWrites(sink: sink).outcome
    }

    /// One value the replayed gateway session wrote to the device.
    public struct GatewayWrite: Hashable, Sendable {
        /// 1 for the transcript's first `connect`, 2 for the second, …
        public var connection: Int
        public var at: Timestamp
        public var bytes: [UInt8]
    }

    /// The outcome and every value the session wrote, so a test can hold the writes against the recording's
    /// `G>D` lines (an ACK or NACK that changed without changing what is stored shows only there).
    public func replayRecordingWrites(sink: Sink? = nil) -> (outcome: ReplayOutcome, writes: [GatewayWrite]) {
        var run = Run(transcript: transcript, outcome: ReplayOutcome(transcript: name, firmware: transcript.firmware), session: LinkSession(configuration: configuration, desiredConfig: desiredConfig), sink: sink)
        run.execute()
        return (run.finish(), run.writes)
    }

    private struct Run {
        let transcript: Transcript
        var outcome: ReplayOutcome
        var session: LinkSession
        let sink: Sink?
        var store = MemoryEventStore()
        var now: Timestamp
        var nextEntry = 0
        var persists: [(at: Timestamp, batch: PersistBatch)] = []
        var timers: [LinkTimer: Timestamp] = [:]
        var storageFullUntil: Timestamp?
        var writes: [GatewayWrite] = []
        /// Reads the session's writes back as one stream per connection: a frame may span two writes (§3.1).
        var writeReader = FrameDecoder()

        init(transcript: Transcript, outcome: ReplayOutcome, session: LinkSession, sink: Sink?) {
            self.transcript = transcript
            self.outcome = outcome
            self.session = session
            self.sink = sink
            self.now = transcript.start
        }

        private enum Due { case entry, persist, timer(LinkTimer) }

        /// Same-instant order: recorded values first, then store completions, then timers (as in LinkPair).
        private func nextDue() -> (Timestamp, Due)? {
            var best: (Timestamp, Int, Due)?
            func consider(_ at: Timestamp, _ rank: Int, _ due: Due) {
                guard at <= transcript.end else { return }
                if let current = best, (current.0, current.1) <= (at, rank) { return }
                best = (at, rank, due)
            }
            if nextEntry < transcript.entries.count { consider(transcript.entries[nextEntry].at, 0, .entry) }
            if let first = persists.first { consider(first.at, 1, .persist) }
            for (rank, timer) in LinkTimer.allCases.enumerated() {
                if let at = timers[timer] { consider(at, 2 + rank, .timer(timer)) }
            }
            return best.map { ($0.0, $0.2) }
        }

        mutating func execute() {
            while let (at, due) = nextDue() {
                now = max(now, at)
                switch due {
                case .entry:
                    let entry = transcript.entries[nextEntry]
                    nextEntry += 1
                    switch entry.event {
                    case .connected(let mtu):
                        outcome.connections += 1
                        writeReader = FrameDecoder()
                        apply(session.connected(mtu: mtu, at: now))
                    case .disconnected:
                        apply(session.disconnected(at: now))
                    case .deviceToGateway(let bytes):
                        apply(session.received(bytes, at: now))
                    case .gatewayToDevice:
                        break  // what the recording's gateway sent; this replay computes its own
                    case .storageFull(let duration):
                        storageFullUntil = now.advanced(by: duration)
                    }
                case .persist:
                    let (_, batch) = persists.removeFirst()
                    if let until = storageFullUntil, until > now {
                        apply(session.persistFailed(batch.id, reason: .storageFull, at: now))
                    } else if let sink, !sink(batch) {
                        apply(session.persistFailed(batch.id, reason: .storageFull, at: now))
                    } else {
                        store.apply(batch)
                        apply(session.persisted(batch.id, at: now))
                    }
                case .timer(let timer):
                    timers[timer] = nil
                    apply(session.timerFired(timer, at: now))
                }
            }
        }

        private func relative(_ instant: Timestamp) -> String {
            let micros = (instant.nanoseconds - transcript.start.nanoseconds) / 1000
            let fraction = String(micros % 1_000_000)
            return "\(micros / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
        }

        private mutating func apply(_ actions: [LinkAction]) {
            for action in actions {
                switch action {
                case .write(let bytes):
                    writes.append(GatewayWrite(connection: outcome.connections, at: now, bytes: bytes))
                    recordNacksSent(in: bytes)
                case .persist(let batch):
                    persists.append((now.advanced(by: transcript.storeLatency), batch))
                case .armTimer(let timer, let at):
                    timers[timer] = at
                case .cancelTimer(let timer):
                    timers[timer] = nil
                case .disconnect(let reason):
                    outcome.gatewayDisconnects.append(reason.description)
                case .report(let report):
                    record(report)
                }
            }
        }

        /// The session reports ACKs; NACKs it sends are read back from its writes so the outcome shows exactly
        /// what went on the wire. One reader per connection: a NACK cut across two MTU-sized writes counts too
        /// (a reader per write lost them; Firmware-fixtures/tools/linkspec.py found it in fw1.0-bad-crc).
        private mutating func recordNacksSent(in bytes: [UInt8]) {
            writeReader.append(bytes)
            while let frame = try? writeReader.decode() {
                if case .nack(let nack)? = try? LinkMessage(frame: frame) {
                    outcome.nacksSent.append(.init(at: relative(now), sequence: Int(nack.sequence.rawValue), reason: nack.reason.description))
                }
            }
        }

        private mutating func record(_ report: LinkReport) {
            switch report {
            case .negotiated(let version, let info):
                outcome.device = .init(serial: info.serial, firmware: info.firmware.description, hardwareRevision: Int(info.hardwareRevision), bootCounter: Int(info.bootCounter), negotiatedVersion: Int(version))
            case .rebootDetected(_, let previous, let boot):
                outcome.reboots.append(.init(at: relative(now), previousBoot: previous.map(Int.init), boot: Int(boot)))
            case .identityChanged:
                break
            case .rejected(let error, _):
                outcome.rejected.append(.init(at: relative(now), code: "\(error.code)", sequence: error.sequence.map { Int($0.rawValue) }, reason: error.reason))
            case .nackReceived(let nack):
                outcome.nacksReceived.append(.init(at: relative(now), sequence: Int(nack.sequence.rawValue), reason: nack.reason.description))
            case .acknowledged:
                outcome.acksSent += 1
            case .duplicate:
                outcome.duplicateEvents += 1
            case .repeatedFrame:
                outcome.repeatedFrames += 1
            case .anchorAdded:
                break  // taken from the store at the end, with the store's view of the clock
            case .timeSyncLost:
                outcome.timeSyncLost += 1
            case .storageRefused(let frames):
                outcome.storageRefusals += frames
            case .bufferOverrun, .desiredConfigRefused, .settings:
                break
            }
        }

        mutating func finish() -> ReplayOutcome {
            outcome.events = store.events.values.map(\.hit).sorted { ($0.key.bootCounter, $0.key.sequence) < ($1.key.bootCounter, $1.key.sequence) }.map { hit in
                ReplayOutcome.Event(
                    boot: Int(hit.key.bootCounter), sequence: hit.key.sequence, ticks: hit.ticks,
                    utc: hit.time.map { UTCFormat.iso8601(Timestamp(nanoseconds: $0.utcNanoseconds)) },
                    uncertaintyMilliseconds: hit.time.map { ReplayOutcome.milliseconds($0.uncertaintyNanoseconds) },
                    durationMilliseconds: Int(hit.durationMilliseconds), intensity: Int(hit.intensity))
            }
            outcome.anchors = store.anchors.map { anchor in
                ReplayOutcome.Anchor(
                    boot: Int(anchor.bootCounter), deviceMilliseconds: Double(anchor.deviceMicroseconds) / 1000,
                    utc: UTCFormat.iso8601(Timestamp(nanoseconds: anchor.gatewayNanoseconds)),
                    uncertaintyMilliseconds: ReplayOutcome.milliseconds(anchor.uncertaintyNanoseconds),
                    roundTripMilliseconds: ReplayOutcome.milliseconds(anchor.roundTripNanoseconds))
            }
            if let battery = store.battery {
                outcome.battery = "\(battery.percent)% \(battery.millivolts) mV\(battery.isCharging ? " charging" : "")"
            }
            outcome.reportedConfigVersion = store.reportedConfig.map { Int($0.version) }
            outcome.reportedSettings = store.reportedConfig?.settings
            outcome.sleeps = store.sleeps.map { notice in
                "\(notice.reason)" + (notice.wakeAfterSeconds.map { ", wake after \($0) s" } ?? "")
            }
            return outcome
        }
    }
}
