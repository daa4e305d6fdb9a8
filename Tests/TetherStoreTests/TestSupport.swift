import TetherDeviceModel
import Foundation
import LinkProtocol
@testable import TetherStore
import TetherPrimitives

/// 2026-11-01T08:00:00Z, the start of every simulated run.
let simulationStart = Timestamp(nanoseconds: (1_793_491_200 + 8 * 3600) * 1_000_000_000)

/// A directory under the system temporary directory, removed when the value is released.
final class TemporaryDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("tether-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

extension Timestamp {
    func plus(milliseconds: Int64) -> Timestamp { advanced(by: .milliseconds(milliseconds)) }
}

func deviceInfo(_ serial: String, boot: UInt16 = 1, firmware: FirmwareVersion = FirmwareVersion(major: 1, minor: 4, patch: 2)) -> DeviceInfo {
    DeviceInfo(hardwareRevision: 3, firmware: firmware, bootCounter: boot, capabilities: [.battery, .sleep], versions: 1...2, serial: serial)
}

func hit(_ serial: String, boot: UInt16 = 1, sequence: Int64, ticks: Int64? = nil, time: TimeEstimate? = nil, at instant: Timestamp = simulationStart) -> StoredHit {
    StoredHit(
        key: EventKey(serial: serial, bootCounter: boot, sequence: sequence), ticks: ticks ?? 1000 * (sequence + 1),
        durationMilliseconds: 1200, intensity: 40, receivedAt: instant, time: time)
}

func anchor(boot: UInt16 = 1, ticks: Int64, utc: Timestamp, uncertainty: Duration = .milliseconds(4)) -> TimeAnchor {
    TimeAnchor(
        bootCounter: boot, deviceMicroseconds: ticks * 1000, gatewayNanoseconds: utc.nanoseconds,
        uncertaintyNanoseconds: uncertainty.nanoseconds, roundTripNanoseconds: uncertainty.nanoseconds * 2)
}

/// One batch, stored in its own transaction at `now`.
@discardableResult
func store(_ items: [PersistItem], id: PersistBatch.ID = 1, in service: ConsumptionService, at now: Timestamp = simulationStart, seed: UInt64 = 7) throws -> BatchOutcome {
    var random = SplitMix64(seed: seed &+ id)
    return try service.apply(PersistBatch(id: id, items: items), at: now, using: &random)
}

/// A firmware model and a gateway session joined under a manual clock, like `LinkPair`, but persisting through
/// the real `ConsumptionService` into a real database. It can crash the gateway: the session is rebuilt from
/// the store, batches in flight are lost (or committed first, when the crash comes after the commit and before
/// the ACK), and the device reconnects.
struct StoreLinkPair {
    private(set) var now: Timestamp
    private(set) var firmware: DeviceModel
    private(set) var session: LinkSession
    private(set) var service: ConsumptionService
    var latency: Duration = .milliseconds(10)
    var persistLatency: Duration = .milliseconds(5)
    private(set) var created: Set<EventKey> = []
    private(set) var released: Set<EventKey> = []
    /// §8.2 violations: an event the device forgot that the database does not have.
    private(set) var releasedBeforeStored: [EventKey] = []
    private(set) var reports: [LinkReport] = []
    private(set) var outcomes: [BatchOutcome] = []
    private(set) var failures: [StoreError] = []
    private(set) var configsApplied: [DeviceConfig] = []
    private(set) var connections = 0
    private var random = SplitMix64(seed: 99)
    private var queue: [(at: Timestamp, order: Int, step: Step)] = []
    private var order = 0
    private var timers: [LinkTimer: Timestamp] = [:]
    private var connected = false
    /// Bumped at every link change: values sent on an older link are dropped.
    private var epoch = 0
    /// Bumped when the gateway crashes: batches the dead process was storing never complete.
    private var gatewayEpoch = 0

    private enum Step {
        case connect
        case toGateway([UInt8], epoch: Int)
        case toDevice([UInt8], epoch: Int)
        case persistDone(PersistBatch, epoch: Int)
        case hit(UInt16, UInt8)
    }

    init(profile: DeviceProfile, service: ConsumptionService, start: Timestamp = simulationStart, bootCounter: UInt16 = 1) throws {
        self.now = start
        self.service = service
        self.firmware = DeviceModel(profile: profile, bootCounter: bootCounter, driftPPM: 25, bootedAt: start)
        let seed = try service.sessionSeed(serial: profile.serial)
        self.session = LinkSession(history: seed.history, clock: seed.clock)
        schedule(.connect, at: start)
    }

    mutating func scheduleHits(count: Int, every interval: Duration, from start: Timestamp) {
        for index in 0..<count {
            schedule(.hit(UInt16(500 + index % 3000), UInt8(10 + index % 90)), at: start.advanced(by: interval * index))
        }
    }

    /// Events in batches the gateway is storing right now (asked, not yet completed).
    var eventsBeingStored: Int {
        queue.reduce(0) { count, item in
            guard case .persistDone(let batch, let batchEpoch) = item.step, batchEpoch == gatewayEpoch else { return count }
            return count + batch.items.filter { if case .hit = $0 { true } else { false } }.count
        }
    }

    var isSettled: Bool { firmware.eventStore.isEmpty && created.allSatisfy { (try? service.event($0)) != nil } }

    mutating func run(for duration: Duration) { run(until: now.advanced(by: duration)) }

    mutating func runUntilSettled(limit: Duration) {
        let deadline = now.advanced(by: limit)
        while !isSettled && now < deadline { run(for: .seconds(1)) }
    }

    mutating func run(until deadline: Timestamp) {
        enum Due { case queued, timer(LinkTimer), firmware }
        while true {
            // Same-instant order as LinkPair: queued steps, then session timers, then the firmware's timer.
            var best: (at: Timestamp, rank: Int, due: Due)?
            func consider(_ at: Timestamp, _ rank: Int, _ due: Due) {
                if let current = best, (current.at, current.rank) <= (at, rank) { return }
                best = (at, rank, due)
            }
            if let first = queue.first { consider(first.at, first.order, .queued) }
            for (rank, timer) in LinkTimer.allCases.enumerated() {
                if let at = timers[timer] { consider(at, Int.max - 10 + rank, .timer(timer)) }
            }
            if connected, let at = firmware.nextDeadline { consider(at, Int.max, .firmware) }
            guard let next = best, next.at <= deadline else { break }
            now = max(now, next.at)
            switch next.due {
            case .queued: perform(queue.removeFirst().step)
            case .firmware: applyFirmware(firmware.handleTimeout(at: now))
            case .timer(let timer):
                timers[timer] = nil
                apply(session.timerFired(timer, at: now))
            }
        }
        now = max(now, deadline)
    }

    /// The gateway process dies. With `afterCommit`, the batches in flight had committed but their ACKs were
    /// never sent; otherwise they were lost with the process. The session is rebuilt from the store.
    mutating func crashGateway(afterCommit: Bool, reopening newService: ConsumptionService? = nil) throws {
        let inFlight = queue.compactMap { item -> PersistBatch? in
            if case .persistDone(let batch, let batchEpoch) = item.step, batchEpoch == gatewayEpoch { return batch }
            return nil
        }
        if afterCommit {
            for batch in inFlight { _ = try service.apply(batch, at: now, using: &random) }
        }
        epoch += 1
        gatewayEpoch += 1
        timers = [:]
        if connected {
            connected = false
            firmware.disconnected(at: now)
            schedule(.connect, at: now.advanced(by: .seconds(1)))
        }
        if let newService { service = newService }
        let seed = try service.sessionSeed(serial: firmware.profile.serial)
        session = LinkSession(history: seed.history, clock: seed.clock)
    }

    mutating func desiredConfigChanged(_ config: DeviceConfig) {
        configsApplied.append(config)
        apply(session.desiredConfigChanged(config, at: now))
    }

    // MARK: Steps

    private mutating func schedule(_ step: Step, at instant: Timestamp) {
        queue.append((instant, order, step))
        order += 1
        queue.sort { ($0.at, $0.order) < ($1.at, $1.order) }
    }

    private mutating func perform(_ step: Step) {
        switch step {
        case .connect:
            guard !connected else { return }
            connected = true
            connections += 1
            epoch += 1
            firmware.connected(mtu: 23, at: now)
            apply(session.connected(mtu: 23, at: now))
        case .toGateway(let bytes, let valueEpoch):
            guard valueEpoch == epoch, connected else { return }
            apply(session.received(bytes, at: now))
        case .toDevice(let bytes, let valueEpoch):
            guard valueEpoch == epoch, connected else { return }
            applyFirmware(firmware.received(bytes, at: now))
        case .persistDone(let batch, let batchEpoch):
            guard batchEpoch == gatewayEpoch else { return }  // the process that asked is gone
            do {
                let outcome = try service.apply(batch, at: now, using: &random)
                outcomes.append(outcome)
                apply(session.persisted(batch.id, at: now))
                if let config = outcome.configToApply { desiredConfigChanged(config) }
            } catch {
                failures.append(error)
                apply(session.persistFailed(batch.id, reason: error.storageFailure, at: now))
            }
        case .hit(let duration, let intensity):
            let (event, actions) = firmware.recordHit(durationMilliseconds: duration, intensity: intensity, at: now)
            if let event { created.insert(EventKey(serial: firmware.profile.serial, bootCounter: event.bootCounter, sequence: Int64(event.eventSequence))) }
            applyFirmware(actions)
        }
    }

    private mutating func apply(_ actions: [LinkAction]) {
        for action in actions {
            switch action {
            case .write(let bytes): schedule(.toDevice(bytes, epoch: epoch), at: now.advanced(by: latency))
            case .persist(let batch): schedule(.persistDone(batch, epoch: gatewayEpoch), at: now.advanced(by: persistLatency))
            case .armTimer(let timer, let at): timers[timer] = at
            case .cancelTimer(let timer): timers[timer] = nil
            case .disconnect:
                firmware.disconnected(at: now)
                connected = false
                epoch += 1
                schedule(.connect, at: now.advanced(by: .seconds(5)))
            case .report(let report): reports.append(report)
            }
        }
    }

    private mutating func applyFirmware(_ actions: [DeviceAction]) {
        for action in actions {
            switch action {
            case .notify(let bytes): schedule(.toGateway(bytes, epoch: epoch), at: now.advanced(by: latency))
            case .disconnect:
                connected = false
                epoch += 1
                apply(session.disconnected(at: now))
                schedule(.connect, at: now.advanced(by: .seconds(1)))
            case .released(let events):
                for event in events {
                    let key = EventKey(serial: firmware.profile.serial, bootCounter: event.bootCounter, sequence: Int64(event.eventSequence))
                    released.insert(key)
                    if (try? service.event(key)) == nil { releasedBeforeStored.append(key) }
                }
            case .settings:
                break
            }
        }
    }
}
