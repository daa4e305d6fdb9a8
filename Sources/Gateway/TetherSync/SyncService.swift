import Foundation
import LinkProtocol
import Logging
import ServiceLifecycle
import Synchronization
import TetherStore
import TetherPrimitives

/// The gateway's sync engine as a long-running Service: it decides when a sync runs (`SyncSchedule`) and runs
/// one at a time on a `SyncEngine`. Triggers: the interval, `localWrite()` after the gateway stored something,
/// `reconnect()` when the network came back, and `syncNow()`. Stops on graceful shutdown (or cancellation),
/// returning the commands of an interrupted push to the queue.
///
/// For the daemon: add it to the `ServiceGroup`; read `status` for a snapshot; subscribe to `finishedEvents()`
/// for every sync's outcome (any number of subscribers). docs/design/sync.md, "Running the engine in a daemon".
public final class SyncService<C: Clock>: Service, Sendable where C.Duration == Duration {
    public let engine: SyncEngine
    private let clock: C
    private let logger: Logger
    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let reportStream: AsyncStream<SyncReport>
    private let reportContinuation: AsyncStream<SyncReport>.Continuation
    private let state: Mutex<State>

    private enum Event: Sendable {
        case trigger(SyncTrigger)
        case timer
    }

    private struct State {
        var status = SyncStatus()
        var seed: UInt64
        /// `syncNow()` callers waiting for the next sync to finish.
        var waiters: [CheckedContinuation<SyncReport, Never>] = []
        /// `finishedEvents()` subscribers.
        var subscribers: [UInt64: AsyncStream<SyncFinished>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
        var stopped = false
    }

    public init(engine: SyncEngine, clock: C, seed: UInt64? = nil, logger: Logger = Logger(label: "tether.sync")) {
        self.engine = engine
        self.clock = clock
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        (reportStream, reportContinuation) = AsyncStream.makeStream(of: SyncReport.self, bufferingPolicy: .bufferingNewest(256))
        var system = SystemRandomNumberGenerator()
        state = Mutex(State(seed: seed ?? system.next()))
    }

    // MARK: - Triggers

    /// The gateway stored something the backend must hear of.
    public func localWrite() { continuation.yield(.trigger(.localWrite)) }

    /// The network came back: sync now, even while backing off.
    public func reconnect() { continuation.yield(.trigger(.reconnect)) }

    /// Runs a sync as soon as the current one (if any) ends, and returns its report. Needs `run()` running; once
    /// the service has stopped the report says so at once.
    public func syncNow() async -> SyncReport {
        await withCheckedContinuation { waiter in
            let stopped = state.withLock { state in
                if !state.stopped { state.waiters.append(waiter) }
                return state.stopped
            }
            if stopped {
                waiter.resume(returning: Self.stoppedReport)
            } else {
                continuation.yield(.trigger(.manual))
            }
        }
    }

    private static var stoppedReport: SyncReport {
        var report = SyncReport(trigger: .manual)
        report.failure = SyncFailure(.network, "the sync service stopped")
        return report
    }

    /// Every sync's report, in order (the newest 256 are kept for a slow reader). One reader.
    public var reports: AsyncStream<SyncReport> { reportStream }

    /// A snapshot of the engine's state (safe from any thread; it does not wait for a running sync).
    public var status: SyncStatus { state.withLock { $0.status } }

    /// A new stream of sync-finished events: one element per sync that ends after this call, for as long as the
    /// subscriber keeps iterating (the newest `buffer` are kept for a slow one). Finishes when the service stops;
    /// a subscriber that stops iterating is dropped.
    public func finishedEvents(buffer: Int = 64) -> AsyncStream<SyncFinished> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncFinished.self, bufferingPolicy: .bufferingNewest(max(1, buffer)))
        let id: UInt64? = state.withLock { state in
            guard !state.stopped else { return nil }
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: - Running

    public func run() async throws {
        var schedule = SyncSchedule(interval: engine.configuration.interval, backoff: engine.configuration.backoff, debounce: engine.configuration.localWriteDebounce)
        var random = state.withLock { SplitMix64(seed: $0.seed) }
        let clock = clock
        let start = clock.now
        func elapsed() -> Duration { start.duration(to: clock.now) }
        schedule.receive(.startup, at: elapsed())
        var pendingTrigger: SyncTrigger = .startup
        let continuation = continuation

        do {
            // One timer at a time: arming an earlier one cancels the one it replaces. (It was a child task per arm in
            // a task group that nothing ever awaited: a group keeps every finished child until it is awaited, and a
            // replaced timer slept on to its own deadline, so tetherd grew without bound, by some 100 MB every few
            // minutes under a stream of local writes and a backend outage — found by heaptrack in the soak.)
            var armed: Duration?
            var timer: Task<Void, Never>?
            defer { timer?.cancel() }
            func arm(_ due: Duration) {
                guard armed.map({ due < $0 }) ?? true else { return }
                armed = due
                timer?.cancel()
                timer = Task {
                    do {
                        try await clock.sleep(until: start.advanced(by: due), tolerance: nil)
                    } catch {
                        return  // replaced, or the service stopped
                    }
                    continuation.yield(.timer)
                }
            }
            await withGracefulShutdownHandler {
                arm(schedule.due)
                for await event in events {
                    switch event {
                    case .trigger(let trigger):
                        pendingTrigger = Self.stronger(pendingTrigger, trigger)
                        schedule.receive(trigger, at: elapsed())
                    case .timer:
                        armed = nil
                    }
                    guard schedule.isDue(at: elapsed()) else {
                        arm(schedule.due)
                        continue
                    }
                    if Task.isShuttingDownGracefully || Task.isCancelled { continue }
                    // The callers waiting now are answered by this sync; later ones by the next.
                    let answering = state.withLock { state in
                        defer { state.waiters.removeAll() }
                        return state.waiters
                    }
                    let trigger = answering.isEmpty ? pendingTrigger : .manual
                    pendingTrigger = .interval
                    schedule.started(at: elapsed())
                    state.withLock { $0.status.running = trigger }
                    let engine = engine
                    // A graceful shutdown interrupts a long push: its commands go back to the queue.
                    let report = await cancelWhenGracefulShutdown { await engine.sync(trigger: trigger) }
                    let due = schedule.finished(
                        succeeded: report.succeeded, retryAfter: report.failure?.retryAfter, at: elapsed(), using: &random)
                    let outbox = try? await engine.outboxCounts()
                    record(report, outbox: outbox, nextIn: due - elapsed(), failures: schedule.consecutiveFailures)
                    for waiter in answering { waiter.resume(returning: report) }
                    arm(due)
                    if Task.isCancelled { break }
                }
            } onGracefulShutdown: {
                continuation.finish()
            }
        }
        // Anyone still waiting gets the last word rather than hanging.
        continuation.finish()
        let (waiting, subscribers) = state.withLock { state in
            state.stopped = true
            state.status.running = nil
            defer {
                state.waiters.removeAll()
                state.subscribers.removeAll()
            }
            return (state.waiters, Array(state.subscribers.values))
        }
        for waiter in waiting { waiter.resume(returning: Self.stoppedReport) }
        for subscriber in subscribers { subscriber.finish() }
        reportContinuation.finish()
        await engine.shutdown()
    }

    private func record(_ report: SyncReport, outbox: OutboxCounts?, nextIn: Duration, failures: Int) {
        let (finished, subscribers) = state.withLock { state in
            var status = state.status
            let now = Date()
            status.running = nil
            status.lastAttemptAt = now
            status.lastResult = SyncResult(report, finishedAt: now)
            status.outbox = outbox ?? status.outbox
            status.consecutiveFailures = failures
            status.nextAttemptAt = now.addingTimeInterval(Double(max(nextIn, .zero).nanoseconds) / 1e9)
            status.clockSkew = report.clockSkew ?? status.clockSkew
            status.totals.syncs += 1
            status.totals.commandsPushed += report.push.commandsSent
            status.totals.changesPulled += report.pull.changes
            status.totals.commandsApplied += report.push.applied
            status.totals.duplicates += report.push.duplicates
            status.totals.conflicts += report.push.conflicts
            status.totals.rejected += report.push.rejected
            status.totals.changesApplied += report.pull.applied
            status.cursor = report.pull.cursorAfter ?? status.cursor
            status.lastGateViolations = report.gateViolations
            if let failure = report.failure {
                status.lastFailure = failure
                status.totals.failures += 1
            } else {
                status.lastSuccessAt = now
            }
            state.status = status
            return (SyncFinished(report: report, status: status), Array(state.subscribers.values))
        }
        if let failure = report.failure {
            logger.warning("sync failed", metadata: ["trigger": "\(report.trigger.rawValue)", "failure": "\(failure)", "retryIn": "\(nextIn)"])
        } else {
            logger.info("sync done", metadata: [
                "trigger": "\(report.trigger.rawValue)", "pushed": "\(report.push.applied)", "duplicates": "\(report.push.duplicates)",
                "conflicts": "\(report.push.conflicts)", "rejected": "\(report.push.rejected)", "pulled": "\(report.pull.changes)",
                "duration": "\(report.duration)",
            ])
        }
        if let skew = report.clockSkew, abs(skew.offset.nanoseconds) > (skew.uncertainty + .seconds(5)).nanoseconds {
            logger.warning("the gateway's clock differs from the server's", metadata: ["offset": "\(skew.offset)", "uncertainty": "\(skew.uncertainty)"])
        }
        reportContinuation.yield(report)
        for subscriber in subscribers { subscriber.yield(finished) }
    }

    /// The trigger a coalesced sync reports: the most deliberate one.
    private static func stronger(_ a: SyncTrigger, _ b: SyncTrigger) -> SyncTrigger {
        let rank: [SyncTrigger: Int] = [.interval: 0, .localWrite: 1, .startup: 2, .reconnect: 3, .manual: 4]
        return (rank[a] ?? 0) >= (rank[b] ?? 0) ? a : b
    }
}

extension SyncService where C == ContinuousClock {
    public convenience init(engine: SyncEngine, seed: UInt64? = nil, logger: Logger = Logger(label: "tether.sync")) {
        self.init(engine: engine, clock: ContinuousClock(), seed: seed, logger: logger)
    }
}
