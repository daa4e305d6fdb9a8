import Foundation
import LinkProtocol
import Synchronization
import TetherStore
import TetherPrimitives

/// The outbox as the sync engine uses it. `StoreOutbox` adapts TetherStore's `Outbox`; a whole pushed batch is
/// settled in one call, which the store turns into one transaction.
public protocol SyncOutbox: Sendable {
    /// Claims up to `limit` ready commands (oldest first, one per entity), each under a lease.
    func claim(limit: Int, now: Timestamp) throws(StoreError) -> [OutboxLease]
    /// Records what the backend said about claimed commands. Leases lost meanwhile (expired and claimed again)
    /// are skipped and counted: the backend deduplicates whatever the new holder pushes.
    func settle(_ settlements: [Settlement], now: Timestamp) throws(StoreError) -> SettleSummary
    /// Puts commands that failed only because the link was down back in line at once, with fresh attempts:
    /// the first successful sync after an outage drains the queue instead of waiting out per-command backoffs.
    func releaseLinkFailures(now: Timestamp) throws(StoreError) -> Int
    /// Drops a command that is not being pushed (a settings conflict resolved by a merge).
    func discard(id: UUID) throws(StoreError)
    func counts() throws(StoreError) -> OutboxCounts
}

/// What became of one claimed command.
public enum Settlement: Sendable {
    /// The backend has it (applied, or a duplicate of what it applied before).
    case completed(OutboxLease)
    case failed(OutboxLease, error: String, kind: OutboxFailureKind)

    public var lease: OutboxLease {
        switch self {
        case .completed(let lease), .failed(let lease, _, _): lease
        }
    }
}

public struct SettleSummary: Hashable, Sendable {
    public var completed = 0
    public var retrying = 0
    public var conflicts = 0
    public var deadLetters = 0
    /// Leases that had expired and been claimed again before the answer came.
    public var leasesLost = 0

    public init() {}
}

/// Commands that failed because of the link carry this prefix in `lastError`; `releaseLinkFailures` looks for it.
public enum LinkFailureMark {
    public static let prefix = "link: "
}

/// `SyncOutbox` over TetherStore's public `Outbox` API: one transaction per claim and per settled batch.
public final class StoreOutbox: SyncOutbox {
    public let outbox: Outbox
    private let random: Mutex<SplitMix64>

    public init(outbox: Outbox, seed: UInt64) {
        self.outbox = outbox
        self.random = Mutex(SplitMix64(seed: seed))
    }

    public func claim(limit: Int, now: Timestamp) throws(StoreError) -> [OutboxLease] {
        var generator = random.withLock { random in SplitMix64(seed: random.next()) }
        return try outbox.claim(limit: limit, now: now, using: &generator)
    }

    /// One store transaction for the whole batch (`Outbox.settle`).
    public func settle(_ settlements: [Settlement], now: Timestamp) throws(StoreError) -> SettleSummary {
        var completing: [OutboxLease] = []
        var failing: [OutboxFailure] = []
        for settlement in settlements {
            switch settlement {
            case .completed(let lease): completing.append(lease)
            case .failed(let lease, let error, let kind): failing.append(OutboxFailure(lease, error: error, kind: kind))
            }
        }
        var generator = random.withLock { random in SplitMix64(seed: random.next()) }
        let settled = try outbox.settle(completing: completing, failing: failing, now: now, using: &generator)
        var summary = SettleSummary()
        summary.completed = settled.completed
        summary.leasesLost = settled.lost.count
        for status in settled.failed {
            switch status {
            case .failed?, .pending?, .inProgress?: summary.retrying += 1
            case .conflict?: summary.conflicts += 1
            case .deadLetter?: summary.deadLetters += 1
            case nil: break  // counted in `leasesLost`
            }
        }
        return summary
    }

    public func releaseLinkFailures(now: Timestamp) throws(StoreError) -> Int {
        var released = 0
        while true {
            let stuck = try outbox.commands(status: .failed, limit: 1000).filter { $0.lastError?.hasPrefix(LinkFailureMark.prefix) == true }
            guard !stuck.isEmpty else { return released }
            for command in stuck { try outbox.retry(id: command.id, now: now) }
            released += stuck.count
        }
    }

    public func discard(id: UUID) throws(StoreError) {
        try outbox.discard(id: id)
    }

    public func counts() throws(StoreError) -> OutboxCounts {
        try outbox.counts()
    }
}
