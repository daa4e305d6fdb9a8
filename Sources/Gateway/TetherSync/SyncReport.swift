import Foundation
import SyncContract
import TetherStore

/// What one push phase did.
public struct PushReport: Hashable, Sendable {
    public var batches = 0
    public var commandsSent = 0
    /// The most commands one request carried (batches shrink after server errors and size refusals).
    public var largestBatch = 0
    /// Time spent in the gateway's store claiming commands and settling results, and building request bodies (the
    /// rest of a push phase is waiting for the server).
    public var claimTime: Duration = .zero
    public var settleTime: Duration = .zero
    public var encodeTime: Duration = .zero
    public var applied = 0
    public var duplicates = 0
    public var conflicts = 0
    public var rejected = 0
    /// Settings conflicts resolved by a three-way merge (a merged command was queued).
    public var settingsMerged = 0
    public var settled = SettleSummary()
    /// Commands returned to the queue because their request failed.
    public var requeued = 0

    public init() {}
}

/// What one pull phase did.
public struct PullReport: Hashable, Sendable {
    public var pages = 0
    public var changes = 0
    /// Changes that altered the gateway's store (the rest were already applied or not for this gateway).
    public var applied = 0
    public var cursorBefore: SyncCursor?
    public var cursorAfter: SyncCursor?

    public init() {}
}

/// One sync: push, pull, apply, gate, cursor.
public struct SyncReport: Hashable, Sendable {
    public var trigger: SyncTrigger
    public var push = PushReport()
    public var pull = PullReport()
    /// The health upload (issue 15); its failure is its own (`health.failure`) and does not fail the sync.
    public var health = HealthUploadReport()
    /// The health projection pull (issue 15), after the upload; like it, its failure is its own.
    public var projections = HealthProjectionReport()
    /// `nil` when the sync completed.
    public var failure: SyncFailure?
    /// Problems the integrity gate found (the cursor did not move).
    public var gateViolations: [GateViolation] = []
    public var clockSkew: ClockSkew.Sample?
    public var duration: Duration = .zero

    public var succeeded: Bool { failure == nil }

    public init(trigger: SyncTrigger) { self.trigger = trigger }
}

/// Why a sync started.
public enum SyncTrigger: String, Hashable, Sendable, CaseIterable {
    /// The service started.
    case startup
    /// The interval elapsed (or a backoff ended).
    case interval
    /// The gateway stored something new.
    case localWrite
    /// The network came back.
    case reconnect
    /// Someone asked (`tether sync`, a test).
    case manual
}

/// The engine's state for `tether status`, the daemon's control API and metrics: a snapshot, cheap to take.
public struct SyncStatus: Hashable, Sendable {
    /// The trigger of the sync running now (nil when idle).
    public var running: SyncTrigger?
    public var lastAttemptAt: Date?
    public var lastSuccessAt: Date?
    /// The last sync's outcome (nil before the first sync ends).
    public var lastResult: SyncResult?
    /// The newest failure (it stays after later successes; `lastResult` says whether the last sync failed).
    public var lastFailure: SyncFailure?
    public var consecutiveFailures = 0
    /// When the next sync starts without a trigger.
    public var nextAttemptAt: Date?
    /// The gateway's clock against the server's Date header. Reported, never used for cursors.
    public var clockSkew: ClockSkew.Sample?
    public var cursor: SyncCursor?
    public var lastGateViolations: [GateViolation] = []
    /// The outbox after the last sync: `deadLetter` commands the backend refused for good, `conflict` commands
    /// parked for a technician, and what is still queued. Nil if the store could not be read.
    public var outbox: OutboxCounts?
    public var totals = Totals()

    /// Counts since the service started.
    public struct Totals: Hashable, Sendable {
        public var syncs = 0
        public var failures = 0
        /// Commands sent in push requests (each retry counts again).
        public var commandsPushed = 0
        public var commandsApplied = 0
        public var duplicates = 0
        public var conflicts = 0
        public var rejected = 0
        /// Changes received from the feed, and those that altered the store.
        public var changesPulled = 0
        public var changesApplied = 0
    }

    public init() {}
}

/// The outcome of one finished sync, as the status keeps it.
public struct SyncResult: Hashable, Sendable {
    public var trigger: SyncTrigger
    public var finishedAt: Date
    public var duration: Duration
    /// `nil` when the sync completed.
    public var failure: SyncFailure?
    public var pushed: Int
    public var pulled: Int

    public var succeeded: Bool { failure == nil }

    public init(_ report: SyncReport, finishedAt: Date) {
        trigger = report.trigger
        self.finishedAt = finishedAt
        duration = report.duration
        failure = report.failure
        pushed = report.push.commandsSent
        pulled = report.pull.changes
    }
}

/// Sent to every `SyncService.finishedEvents()` subscriber when a sync ends.
public struct SyncFinished: Sendable {
    /// What the sync did.
    public var report: SyncReport
    /// The status right after it (totals, outbox counts, the next attempt).
    public var status: SyncStatus
}
