import Foundation
import GRDB
import LinkProtocol
import TetherPrimitives

/// How the outbox retries (docs/design/store.md, "Outbox").
public struct OutboxPolicy: Hashable, Sendable {
    /// Claims a command may use before it becomes a dead letter. An expired lease counts as an attempt.
    public var maximumAttempts = 10
    public var backoffBase: Duration = .seconds(1)
    public var backoffCap: Duration = .seconds(15 * 60)
    /// How long a claim is exclusive. A pusher that dies mid-push loses its claim when this runs out.
    public var leaseDuration: Duration = .seconds(60)

    public init() {}

    /// "Full jitter": a delay drawn uniformly from `0 ... min(cap, base · 2^(attempt − 1))`. Spreading retries
    /// over the whole interval keeps many gateways that failed together from retrying together.
    public func backoff(afterAttempt attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(attempt - 1, 0), 62)
        let (scaled, overflow) = backoffBase.nanoseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        let ceiling = overflow ? backoffCap.nanoseconds : min(backoffCap.nanoseconds, scaled)
        guard ceiling > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...ceiling, using: &random))
    }
}

/// A claim on one outbox command: the pusher sends `command` and reports back with the same lease.
public struct OutboxLease: Hashable, Sendable {
    public var command: OutboxCommandRecord
    public var token: String
    public var expiresAt: Timestamp

    /// A lease is only as good as the row it names: `complete`/`fail` check `token` against the stored one.
    public init(command: OutboxCommandRecord, token: String, expiresAt: Timestamp) {
        self.command = command
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// A claimed command that did not go through, for `Outbox.fail(_:now:using:)` and `Outbox.settle`.
public struct OutboxFailure: Hashable, Sendable {
    public var lease: OutboxLease
    public var error: String
    public var kind: OutboxFailureKind

    public init(_ lease: OutboxLease, error: String, kind: OutboxFailureKind = .transient) {
        self.lease = lease
        self.error = error
        self.kind = kind
    }
}

/// What `Outbox.settle` did with a pushed batch.
public struct OutboxSettlement: Hashable, Sendable {
    /// Commands that left the outbox.
    public var completed = 0
    /// The new status of each failure, in the order given; `nil` where the lease was no longer held.
    public var failed: [OutboxCommandRecord.Status?] = []
    /// Leases no longer held (expired and released or claimed again): nothing was changed for them.
    public var lost: [OutboxLease] = []

    public init() {}
}

/// What the backend said about a command that did not go through.
public enum OutboxFailureKind: Hashable, Sendable {
    /// Network error, timeout, 5xx, 429: try again after a backoff, up to the policy's attempts.
    case transient
    /// The backend's state conflicts with the command (409): park it for a decision.
    case conflict
    /// The backend will never take it (4xx other than 409/429): dead letter at once.
    case rejected
}

/// Commands per status, for `tether status` and metrics.
public struct OutboxCounts: Hashable, Sendable {
    public var pending = 0
    public var inProgress = 0
    public var failed = 0
    public var conflict = 0
    public var deadLetter = 0

    public var total: Int { pending + inProgress + failed + conflict + deadLetter }

    public subscript(status: OutboxCommandRecord.Status) -> Int {
        switch status {
        case .pending: pending
        case .inProgress: inProgress
        case .failed: failed
        case .conflict: conflict
        case .deadLetter: deadLetter
        }
    }
}

/// The transactional outbox: every change the backend must hear of is a command written in the same transaction
/// as the change itself, and pushed from here at least once; the command id (a UUIDv7) lets the backend apply it
/// exactly once.
///
/// Rules (docs/design/store.md has the table):
/// - Order per entity: a command is claimable only when no earlier command of its entity remains.
/// - Coalescing: a new command folds into the entity's last command while that one has never left the gateway
///   (create+update → create, create+delete → nothing, update+update → the last update, update+delete → delete).
/// - Claims carry a lease; an expired lease returns the command to `pending` (or `dead_letter` when its attempts
///   are spent), so a pusher that crashed mid-push delays a command but never loses it.
/// - A transient failure schedules a retry after a full-jitter exponential backoff; after `maximumAttempts` the
///   command becomes a dead letter with its last error, until `retry` or `discard` by id.
public struct Outbox: Sendable {
    public typealias Status = OutboxCommandRecord.Status
    public typealias Operation = OutboxCommandRecord.Operation

    public let database: GatewayDatabase
    public let policy: OutboxPolicy

    public init(database: GatewayDatabase, policy: OutboxPolicy = OutboxPolicy()) {
        self.database = database
        self.policy = policy
    }

    // MARK: - Pushing

    /// Claims up to `limit` ready commands, oldest first, at most one per entity, each leased until
    /// `now + leaseDuration`. Expired leases are released first.
    ///
    /// One set-based statement: the ready commands are found through `outboxCommandReady` (push order, stopping
    /// at the limit) and updated in place, so a claim touches only the rows it takes, whatever is queued behind.
    public func claim(limit: Int, now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> [OutboxLease] {
        guard limit > 0 else { return [] }
        let token = UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &random))
        let expiresAt = now.advanced(by: policy.leaseDuration)
        let maximumAttempts = policy.maximumAttempts
        return try database.write { db in
            try Self.releaseExpiredLeases(db, now: now, maximumAttempts: maximumAttempts)
            let claimed = try OutboxCommandRecord.fetchAll(db.cachedStatement(sql: """
                UPDATE outboxCommand
                SET status = 'in_progress', attempts = attempts + 1, firstAttemptAt = COALESCE(firstAttemptAt, :now),
                    leaseToken = :token, leaseExpiresAt = :expiresAt, updatedAt = :now
                WHERE seq IN (
                    SELECT o.seq FROM outboxCommand AS o INDEXED BY outboxCommandReady
                    WHERE o.status IN ('pending', 'failed') AND o.nextAttemptAt <= :now
                      AND NOT EXISTS (
                        SELECT 1 FROM outboxCommand AS p
                        WHERE p.entityType = o.entityType AND p.entityId = o.entityId AND p.seq < o.seq)
                    ORDER BY o.seq
                    LIMIT :limit)
                RETURNING *
                """), arguments: ["now": now.nanoseconds, "token": token, "expiresAt": expiresAt.nanoseconds, "limit": limit])
            // RETURNING gives rows in no promised order.
            return claimed.sorted { ($0.seq ?? 0) < ($1.seq ?? 0) }.map { OutboxLease(command: $0, token: token, expiresAt: expiresAt) }
        }
    }

    /// The backend applied the command: it leaves the outbox, and its entity is synced if nothing else is queued
    /// for it. Throws `leaseLost` when the lease expired and the command was released or claimed again.
    public func complete(_ lease: OutboxLease, now: Timestamp) throws(StoreError) {
        let lost = try complete([lease], now: now)
        guard lost.isEmpty else { throw StoreError(.leaseLost, "the lease on \(lease.command.id) is no longer held") }
    }

    /// Completes a whole pushed batch in one transaction (one fsync instead of one per command), with the checks
    /// and effects of `complete(_:now:)` per lease. Leases no longer held are skipped and returned.
    @discardableResult
    public func complete(_ leases: [OutboxLease], now: Timestamp) throws(StoreError) -> [OutboxLease] {
        let policy = policy
        return try database.write { db in try Self.settle(db, completing: leases, failing: [], jitterSources: [], policy: policy, now: now).lost }
    }

    /// The push failed. Returns the command's new status: `failed` (retry scheduled), `conflict` or `deadLetter`.
    @discardableResult
    public func fail(_ lease: OutboxLease, error: String, kind: OutboxFailureKind = .transient, now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> Status {
        let settled = try settle(completing: [], failing: [OutboxFailure(lease, error: error, kind: kind)], now: now, using: &random)
        guard let status = settled.failed.first ?? nil else { throw StoreError(.leaseLost, "the lease on \(lease.command.id) is no longer held") }
        return status
    }

    /// Fails several commands in one transaction, as `fail(_:error:kind:now:using:)` does each. Returns each new
    /// status in order, `nil` where the lease was no longer held.
    @discardableResult
    public func fail(_ failures: [OutboxFailure], now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> [Status?] {
        try settle(completing: [], failing: failures, now: now, using: &random).failed
    }

    /// Records what the backend said about a pushed batch in ONE transaction: `completing` leave the outbox
    /// (their entities synced when nothing else is queued for them), `failing` are rescheduled, parked or
    /// dead-lettered. A lease no longer held changes nothing and is reported in `lost`.
    public func settle(completing: [OutboxLease], failing: [OutboxFailure], now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> OutboxSettlement {
        guard !completing.isEmpty || !failing.isEmpty else { return OutboxSettlement() }
        let jitterSources = failing.map { _ in random.next() }
        let policy = policy
        return try database.write { db in
            try Self.settle(db, completing: completing, failing: failing, jitterSources: jitterSources, policy: policy, now: now)
        }
    }

    private static func settle(
        _ db: Database, completing: [OutboxLease], failing: [OutboxFailure], jitterSources: [UInt64], policy: OutboxPolicy, now: Timestamp
    ) throws -> OutboxSettlement {
        var settlement = OutboxSettlement()
        let delete = try db.cachedStatement(sql: "DELETE FROM outboxCommand WHERE id = ? AND status = 'in_progress' AND leaseToken = ?")
        let others = try db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM outboxCommand WHERE entityType = ? AND entityId = ?)")
        for lease in completing {
            try delete.execute(arguments: [UUIDv7.lowercaseString(lease.command.id), lease.token])
            guard db.changesCount == 1 else {
                settlement.lost.append(lease)
                continue
            }
            settlement.completed += 1
            let command = lease.command
            if try Bool.fetchOne(others, arguments: [command.entityType.rawValue, command.entityId]) == false, let entity = command.entity {
                try Self.markSynced(db, entity, at: now)
            }
        }
        let update = try db.cachedStatement(sql: """
            UPDATE outboxCommand
            SET status = ?, nextAttemptAt = COALESCE(?, nextAttemptAt), lastError = ?, updatedAt = ?, leaseToken = NULL, leaseExpiresAt = NULL
            WHERE id = ? AND status = 'in_progress' AND leaseToken = ?
            RETURNING status
            """)
        for (failure, jitterSource) in zip(failing, jitterSources) {
            // The attempts count is the one the claim stored: the lease's copy of the row carries it.
            let attempts = failure.lease.command.attempts
            let status: Status
            let nextAttemptAt: Int64?
            switch failure.kind {
            case .transient where attempts < policy.maximumAttempts:
                var jitter = SplitMix64(seed: jitterSource)
                status = .failed
                nextAttemptAt = now.advanced(by: policy.backoff(afterAttempt: attempts, using: &jitter)).nanoseconds
            case .transient, .rejected:
                status = .deadLetter
                nextAttemptAt = nil
            case .conflict:
                status = .conflict
                nextAttemptAt = nil
            }
            let stored = try String.fetchOne(update, arguments: [
                status.rawValue, nextAttemptAt, failure.error, now.nanoseconds,
                UUIDv7.lowercaseString(failure.lease.command.id), failure.lease.token,
            ])
            if stored == nil {
                settlement.failed.append(nil)
                settlement.lost.append(failure.lease)
            } else {
                settlement.failed.append(status)
            }
        }
        return settlement
    }

    /// Returns commands whose lease ran out to `pending` (or `deadLetter` when their attempts are spent).
    @discardableResult
    public func releaseExpiredLeases(now: Timestamp) throws(StoreError) -> Int {
        let maximumAttempts = policy.maximumAttempts
        return try database.write { db in try Self.releaseExpiredLeases(db, now: now, maximumAttempts: maximumAttempts) }
    }

    // MARK: - Operator actions

    /// Puts a dead-lettered, conflicting or failed command back in line with a fresh attempt budget.
    public func retry(id: UUID, now: Timestamp) throws(StoreError) {
        try database.write { db in
            guard var command = try OutboxCommandRecord.filter(OutboxCommandRecord.Columns.id == UUIDv7.lowercaseString(id)).fetchOne(db) else {
                throw StoreError(.notFound, "no outbox command \(id)")
            }
            switch command.status {
            case .deadLetter, .conflict, .failed:
                command.status = .pending
                command.attempts = 0
                command.nextAttemptAt = now.nanoseconds
                command.updatedAt = now.nanoseconds
                try command.update(db)
            case .pending, .inProgress:
                throw StoreError(.invalidRequest, "command \(id) is \(command.status.rawValue); only failed, conflict and dead_letter commands can be retried")
            }
        }
    }

    /// Drops a command that is not being pushed. Its entity stays unsynced (and so is never pruned).
    public func discard(id: UUID) throws(StoreError) {
        try database.write { db in
            guard let command = try OutboxCommandRecord.filter(OutboxCommandRecord.Columns.id == UUIDv7.lowercaseString(id)).fetchOne(db) else {
                throw StoreError(.notFound, "no outbox command \(id)")
            }
            guard command.status != .inProgress else {
                throw StoreError(.invalidRequest, "command \(id) is being pushed; discard it after its lease ends")
            }
            try command.delete(db)
        }
    }

    // MARK: - Queries for the CLI and status

    public func counts() throws(StoreError) -> OutboxCounts {
        try database.read { db in
            var counts = OutboxCounts()
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS count FROM outboxCommand GROUP BY status") {
                let count: Int = row["count"]
                switch Status(rawValue: row["status"] ?? "") {
                case .pending?: counts.pending = count
                case .inProgress?: counts.inProgress = count
                case .failed?: counts.failed = count
                case .conflict?: counts.conflict = count
                case .deadLetter?: counts.deadLetter = count
                case nil: break  // the CHECK constraint admits no other status
                }
            }
            return counts
        }
    }

    /// How long the oldest command still on its way (pending, in progress or awaiting a retry) has waited.
    public func oldestPendingAge(now: Timestamp) throws(StoreError) -> Duration? {
        try database.read { db in
            try Int64.fetchOne(db, sql: "SELECT MIN(createdAt) FROM outboxCommand WHERE status IN ('pending', 'in_progress', 'failed')")
        }.map { Timestamp(nanoseconds: $0).duration(to: now) }
    }

    /// Commands in push order, optionally of one status.
    public func commands(status: Status? = nil, limit: Int = 100) throws(StoreError) -> [OutboxCommandRecord] {
        try database.read { db in
            var request = OutboxCommandRecord.order(OutboxCommandRecord.Columns.seq)
            if let status { request = request.filter(OutboxCommandRecord.Columns.status == status) }
            return try request.limit(limit).fetchAll(db)
        }
    }

    public func commands(for entity: OutboxEntity) throws(StoreError) -> [OutboxCommandRecord] {
        try database.read { db in try Self.commands(db, for: entity) }
    }

    // MARK: - Inside a caller's transaction

    /// What `enqueue` did with a new command.
    enum EnqueueOutcome: Hashable {
        case appended
        /// Folded into the entity's last, never-sent command.
        case coalesced
        /// create + delete of an entity the backend never heard of: both are gone.
        case cancelled
    }

    /// Queues a command for `entity`, coalescing it into the entity's last command if that one never left.
    @discardableResult
    static func enqueue(_ db: Database, entity: OutboxEntity, operation: Operation, payload: String, now: Timestamp, id: UUID) throws -> EnqueueOutcome {
        let outcome = try coalesce(db, entity: entity, operation: operation, payload: payload, now: now)
        if outcome == nil { try append(db, entity: entity, operation: operation, payload: payload, now: now, id: id) }
        if operation != .create { try markUnsynced(db, entity) }
        return outcome ?? .appended
    }

    /// Queues the create command of an entity inserted in this very transaction. No earlier command can exist
    /// for it (an event's identity is unique and a pruned one is refused as a duplicate), so the coalescing look-up
    /// is skipped on this hot path.
    static func enqueueCreateOfNewEntity(_ db: Database, entity: OutboxEntity, payload: String, context: inout WriteContext) throws {
        let now = context.now.nanoseconds
        try context.statement(db, .insertCommand).execute(arguments: [
            UUIDv7.lowercaseString(context.nextCommandID()), entity.kind.rawValue, entity.id, Operation.create.rawValue, payload, now, now, now,
        ])
    }

    private static func coalesce(_ db: Database, entity: OutboxEntity, operation: Operation, payload: String, now: Timestamp) throws -> EnqueueOutcome? {
        guard var last = try commands(db, for: entity).last else { return nil }
        switch (last.operation, operation) {
        case (.create, .create), (.update, .create):
            throw StoreError(.invalidRequest, "\(entity): create after \(last.operation.rawValue)")
        case (.delete, .update):
            throw StoreError(.invalidRequest, "\(entity): update after delete")
        case (.delete, .create):
            return nil  // re-created: the backend must see the delete, then the create
        case (.create, .update), (.update, .update), (.update, .delete), (.delete, .delete), (.create, .delete):
            break
        }
        // Only a command that never left the gateway may change: the backend may have seen any other's id.
        guard last.status == .pending, last.firstAttemptAt == nil else { return nil }
        if last.operation == .create && operation == .delete {
            try last.delete(db)
            return .cancelled
        }
        if last.operation == .update && operation == .delete { last.operation = .delete }
        last.payload = payload
        last.updatedAt = now.nanoseconds
        try last.update(db)
        return .coalesced
    }

    private static func append(_ db: Database, entity: OutboxEntity, operation: Operation, payload: String, now: Timestamp, id: UUID) throws {
        try db.cachedStatement(sql: WriteContext.HotStatement.insertCommand.sql).execute(arguments: [
            UUIDv7.lowercaseString(id), entity.kind.rawValue, entity.id, operation.rawValue, payload,
            now.nanoseconds, now.nanoseconds, now.nanoseconds,
        ])
    }

    static func commands(_ db: Database, for entity: OutboxEntity) throws -> [OutboxCommandRecord] {
        try OutboxCommandRecord
            .filter(OutboxCommandRecord.Columns.entityType == entity.kind && OutboxCommandRecord.Columns.entityId == entity.id)
            .order(OutboxCommandRecord.Columns.seq)
            .fetchAll(db)
    }

    @discardableResult
    static func releaseExpiredLeases(_ db: Database, now: Timestamp, maximumAttempts: Int) throws -> Int {
        try db.execute(sql: """
            UPDATE outboxCommand
            SET status = CASE WHEN attempts >= :maximumAttempts THEN 'dead_letter' ELSE 'pending' END,
                leaseToken = NULL, leaseExpiresAt = NULL, nextAttemptAt = :now, updatedAt = :now,
                lastError = 'lease expired before the push completed'
            WHERE status = 'in_progress' AND leaseExpiresAt <= :now
            """, arguments: ["now": now.nanoseconds, "maximumAttempts": maximumAttempts])
        return db.changesCount
    }

    /// The backend has everything about this entity: retention may prune it once it is old enough.
    private static func markSynced(_ db: Database, _ entity: OutboxEntity, at now: Timestamp) throws {
        guard let row = entity.retainedRow else { return }
        try db.cachedStatement(sql: "UPDATE \(row.table) SET syncedAt = ? WHERE \(row.match)")
            .execute(arguments: [now.nanoseconds] + row.arguments)
    }

    /// A new command about the entity: retention must keep it until the backend has that one too.
    private static func markUnsynced(_ db: Database, _ entity: OutboxEntity) throws {
        guard let row = entity.retainedRow else { return }
        try db.cachedStatement(sql: "UPDATE \(row.table) SET syncedAt = NULL WHERE \(row.match)").execute(arguments: row.arguments)
    }
}
