import Foundation
import GRDB
import LinkProtocol
import Synchronization
import TetherStore
import TetherSync

/// A PROTOTYPE, for the benchmark only, of the batch settlement TetherStore's `Outbox` lacks: it completes a
/// whole pushed batch in one transaction instead of one transaction (and one fsync) per command. It reproduces
/// `Outbox.complete` (lease check, delete, mark the entity synced when nothing else is queued for it) through
/// a second connection to the gateway's file, which a real gateway must not do (one type owns the database).
/// It exists to measure what the proposed `Outbox.complete(_ leases: [OutboxLease], now:)` would give; claims,
/// failures and everything else go through the public API.
///
/// It also runs ANALYZE once: without table statistics SQLite answers `Outbox.claim`'s query through the status
/// index and sorts every ready command by `seq` (about 1 s per claim with 300,000 queued here); with them it walks
/// the table in `seq` order and stops at the limit (about 17 ms). The second half of the proposed store change is
/// `PRAGMA optimize` after migrating, or `+o.status` in the claim query.
final class BatchSettlingOutbox: SyncOutbox {
    private let store: StoreOutbox
    private let writer: DatabaseQueue

    init(database: GatewayDatabase, path: String) throws {
        store = StoreOutbox(outbox: Outbox(database: database), seed: 1)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.foreignKeysEnabled = true
        let synchronous = database.configuration.synchronous.rawValue
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        writer = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Gathers the table statistics. Connections load them when they open: call this before opening the
    /// `GatewayDatabase` the engine uses.
    static func analyze(path: String) throws {
        try DatabaseQueue(path: path).writeWithoutTransaction { db in try db.execute(sql: "ANALYZE") }
    }

    func claim(limit: Int, now: LinkInstant) throws(StoreError) -> [OutboxLease] {
        try store.claim(limit: limit, now: now)
    }

    func settle(_ settlements: [Settlement], now: LinkInstant) throws(StoreError) -> SettleSummary {
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

    func releaseLinkFailures(now: LinkInstant) throws(StoreError) -> Int { try store.releaseLinkFailures(now: now) }
    func discard(id: UUID) throws(StoreError) { try store.discard(id: id) }
    func counts() throws(StoreError) -> OutboxCounts { try store.counts() }
}
