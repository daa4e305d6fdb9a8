/// When the next sync runs: the scheduler's rules in one place, without a clock or a task (times are durations
/// since the service started; randomness comes in as a parameter).
///
/// | input | idle | while a sync runs |
/// |---|---|---|
/// | start | due at once | — |
/// | manual, reconnect | due at once, even while backing off | run again as soon as it ends |
/// | local write, healthy | due no sooner than `debounce` after the last start | run again after it (same debounce) |
/// | local write, failing | no change: the backoff stands | no change |
/// | sync succeeded | — | failures reset; due after `interval` (or as a trigger during it asked) |
/// | sync failed | — | due after the backoff (exponential, full jitter, cap; Retry-After a floor), unless manual/reconnect asked |
public struct SyncSchedule: Sendable {
    public let interval: Duration
    public let backoff: Backoff
    public let debounce: Duration
    public private(set) var consecutiveFailures = 0
    /// When the next sync is due (meaningless while one runs).
    public private(set) var due: Duration = .zero
    public private(set) var isRunning = false
    private var lastStart: Duration?
    /// Asked for while a sync ran: the earliest time to run again, and whether it overrides a backoff.
    private var rerun: (at: Duration, urgent: Bool)?

    public init(interval: Duration, backoff: Backoff, debounce: Duration) {
        self.interval = interval
        self.backoff = backoff
        self.debounce = debounce
    }

    /// A trigger arrived at `now`.
    public mutating func receive(_ trigger: SyncTrigger, at now: Duration) {
        let debounced = max(now, (lastStart ?? now) + debounce)
        switch (trigger, isRunning) {
        case (.manual, false), (.reconnect, false), (.startup, false):
            due = min(due, now)
        case (.manual, true), (.reconnect, true), (.startup, true):
            rerun = (now, true)
        case (.localWrite, false) where consecutiveFailures == 0:
            due = min(due, debounced)
        case (.localWrite, true) where consecutiveFailures == 0:
            rerun = rerun.map { ($0.at, $0.urgent) } ?? (debounced, false)
        case (.localWrite, _), (.interval, _):
            break
        }
    }

    /// Whether a sync should start at `now`.
    public func isDue(at now: Duration) -> Bool { !isRunning && now >= due }

    /// A sync started at `now`.
    public mutating func started(at now: Duration) {
        isRunning = true
        lastStart = now
        rerun = nil
    }

    /// The running sync finished at `now`; returns when the next one is due.
    @discardableResult
    public mutating func finished(succeeded: Bool, retryAfter: Duration?, at now: Duration, using random: inout some RandomNumberGenerator) -> Duration {
        isRunning = false
        if succeeded {
            consecutiveFailures = 0
            due = min(now + interval, rerun.map { max(now, $0.at) } ?? now + interval)
        } else {
            consecutiveFailures += 1
            due = now + backoff.delay(afterFailures: consecutiveFailures, retryAfter: retryAfter, using: &random)
            if let rerun, rerun.urgent { due = now }
        }
        rerun = nil
        return due
    }
}
