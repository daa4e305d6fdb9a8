import Foundation
import GRDB
import LinkProtocol
import Synchronization
import TetherStore
import TetherSync
import TetherPrimitives

/// The BASELINE the drain is measured against, in the same run: the outbox as the previous session's best
/// measurement had it (171 s for 1,000,000 commands). It reproduces, through a second connection to the gateway's
/// file (which a real gateway must not do: one type owns the database), the old `Outbox.claim` (find the ready
/// commands, then update each claimed row through its full record) without the `outboxCommandReady` index, with
/// table statistics (ANALYZE, without which that claim sorted every ready command per claim), and the batch
/// settle prototype of that session (completions in one transaction). Failures go through the public API.
final class LegacyOutbox: SyncOutbox {
    private let store: StoreOutbox
    private let writer: DatabaseQueue
    private let random = Mutex(SplitMix64(seed: 2))
    private let policy = OutboxPolicy()

    init(database: GatewayDatabase, path: String) throws {
        store = StoreOutbox(outbox: Outbox(database: database), seed: 1)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.foreignKeysEnabled = true
        let synchronous = database.configuration.synchronous.rawValue
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        writer = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Takes the database back to the baseline's indexes and gathers statistics. Connections load them when they
    /// open: call this before opening the `GatewayDatabase` the engine uses.
    static func prepare(path: String) throws {
        try DatabaseQueue(path: path).writeWithoutTransaction { db in
            try db.execute(sql: "DROP INDEX IF EXISTS outboxCommandReady")
            try db.execute(sql: "ANALYZE")
        }
    }

    func claim(limit: Int, now: Timestamp) throws(StoreError) -> [OutboxLease] {
        var generator = random.withLock { random in SplitMix64(seed: random.next()) }
        let token = UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &generator))
        let expiresAt = now.advanced(by: policy.leaseDuration)
        do {
            return try writer.write { db in
                try db.execute(sql: """
                    UPDATE outboxCommand
                    SET status = CASE WHEN attempts >= :maximumAttempts THEN 'dead_letter' ELSE 'pending' END,
                        leaseToken = NULL, leaseExpiresAt = NULL, nextAttemptAt = :now, updatedAt = :now,
                        lastError = 'lease expired before the push completed'
                    WHERE status = 'in_progress' AND leaseExpiresAt <= :now
                    """, arguments: ["now": now.nanoseconds, "maximumAttempts": policy.maximumAttempts])
                let ready = try OutboxCommandRecord.fetchAll(db, sql: """
                    SELECT * FROM outboxCommand AS o
                    WHERE o.status IN ('pending', 'failed') AND o.nextAttemptAt <= ?
                      AND NOT EXISTS (
                        SELECT 1 FROM outboxCommand AS p
                        WHERE p.entityType = o.entityType AND p.entityId = o.entityId AND p.seq < o.seq)
                    ORDER BY o.seq
                    LIMIT ?
                    """, arguments: [now.nanoseconds, limit])
                return try ready.map { command in
                    var command = command
                    command.status = .inProgress
                    command.attempts += 1
                    command.firstAttemptAt = command.firstAttemptAt ?? now.nanoseconds
                    command.leaseToken = token
                    command.leaseExpiresAt = expiresAt.nanoseconds
                    command.updatedAt = now.nanoseconds
                    try command.update(db)
                    return OutboxLease(command: command, token: token, expiresAt: expiresAt)
                }
            }
        } catch {
            throw StoreError(error)
        }
    }

    func settle(_ settlements: [Settlement], now: Timestamp) throws(StoreError) -> SettleSummary {
        var completed: [OutboxLease] = []
        var others: [Settlement] = []
        for settlement in settlements {
            if case .completed(let lease) = settlement { completed.append(lease) } else { others.append(settlement) }
        }
        var summary = try store.settle(others, now: now)
        do {
            let (done, lost) = try writer.write { db -> (Int, Int) in
                let delete = try db.cachedStatement(sql: "DELETE FROM outboxCommand WHERE id = ? AND status = 'in_progress' AND leaseToken = ?")
                let remaining = try db.cachedStatement(sql: "SELECT 1 FROM outboxCommand WHERE entityType = ? AND entityId = ? LIMIT 1")
                let syncEvent = try db.cachedStatement(sql: """
                    UPDATE consumptionEvent SET syncedAt = ?
                    WHERE deviceId = (SELECT id FROM device WHERE serial = ?) AND bootCounter = ? AND sequence = ?
                    """)
                var done = 0
                var lost = 0
                for lease in completed {
                    try delete.execute(arguments: [lease.command.id.uuidString.lowercased(), lease.token])
                    guard db.changesCount == 1 else {
                        lost += 1
                        continue
                    }
                    done += 1
                    guard case .consumptionEvent(let key)? = lease.command.entity,
                        try Row.fetchOne(remaining, arguments: [lease.command.entityType.rawValue, lease.command.entityId]) == nil
                    else { continue }
                    try syncEvent.execute(arguments: [now.nanoseconds, key.serial, key.bootCounter, key.sequence])
                }
                return (done, lost)
            }
            summary.completed += done
            summary.leasesLost += lost
        } catch {
            throw StoreError(error)
        }
        return summary
    }

    func releaseLinkFailures(now: Timestamp) throws(StoreError) -> Int { try store.releaseLinkFailures(now: now) }
    func discard(id: UUID) throws(StoreError) { try store.discard(id: id) }
    func counts() throws(StoreError) -> OutboxCounts { try store.counts() }
}
