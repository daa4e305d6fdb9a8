import Foundation
import SyncContract

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

/// The engine's state for `tether status` and metrics.
public struct SyncStatus: Hashable, Sendable {
    public var lastAttemptAt: Date?
    public var lastSuccessAt: Date?
    public var lastFailure: SyncFailure?
    public var consecutiveFailures = 0
    /// When the next sync starts without a trigger.
    public var nextAttemptAt: Date?
    public var clockSkew: ClockSkew.Sample?
    public var cursor: SyncCursor?
    public var lastGateViolations: [GateViolation] = []
    public var totals = Totals()

    public struct Totals: Hashable, Sendable {
        public var syncs = 0
        public var failures = 0
        public var commandsApplied = 0
        public var duplicates = 0
        public var conflicts = 0
        public var rejected = 0
        public var changesApplied = 0
    }

    public init() {}
}
