import GRDB
import LinkProtocol
import TetherPrimitives

/// How long synced data stays on the gateway.
public struct RetentionPolicy: Hashable, Sendable {
    /// Events and telemetry the backend has acknowledged are deleted once they are older than this.
    public var keepSynced: Duration = .seconds(30 * 86_400)

    public init(keepSynced: Duration = .seconds(30 * 86_400)) { self.keepSynced = keepSynced }
}

public struct PruneReport: Hashable, Sendable {
    public var events = 0
    public var telemetry = 0
    public var anchors = 0
}

/// Deletes synced data past the retention period, and nothing else: an event or a telemetry record is deleted
/// only when no outbox command refers to it (`syncedAt` is set) and it was received before the cut-off.
///
/// The dedup guarantee survives pruning: for each boot, `boot.prunedThroughSequence` and `boot.prunedGaps`
/// remember which sequences were stored, so an event the device sends again after its row is gone is still
/// recognised as a duplicate (§8.8), and one that never arrived is still accepted.
public struct Retention: Sendable {
    public let database: GatewayDatabase
    public let policy: RetentionPolicy

    public init(database: GatewayDatabase, policy: RetentionPolicy = RetentionPolicy()) {
        self.database = database
        self.policy = policy
    }

    @discardableResult
    public func prune(now: Timestamp) throws(StoreError) -> PruneReport {
        let cutoff = now.nanoseconds - policy.keepSynced.nanoseconds
        return try database.write { db in
            var report = PruneReport()
            let boots = try BootRecord.fetchAll(db, sql: """
                SELECT * FROM boot WHERE EXISTS (
                    SELECT 1 FROM consumptionEvent AS e
                    WHERE e.deviceId = boot.deviceId AND e.bootCounter = boot.bootCounter
                      AND e.syncedAt IS NOT NULL AND e.receivedAt < ?)
                """, arguments: [cutoff])
            for boot in boots { report.events += try prune(boot, cutoff: cutoff, in: db) }

            try db.execute(sql: "DELETE FROM deviceTelemetry WHERE syncedAt IS NOT NULL AND receivedAt < ?", arguments: [cutoff])
            report.telemetry = db.changesCount

            // Anchors only serve to derive event times: those of a boot with no events left, other than the
            // device's current boot, are no longer needed once old.
            try db.execute(sql: """
                DELETE FROM timeAnchor
                WHERE gatewayNanoseconds < ?
                  AND NOT EXISTS (SELECT 1 FROM consumptionEvent AS e WHERE e.deviceId = timeAnchor.deviceId AND e.bootCounter = timeAnchor.bootCounter)
                  AND bootCounter IS NOT (SELECT latestBoot FROM device WHERE device.id = timeAnchor.deviceId)
                """, arguments: [cutoff])
            report.anchors = db.changesCount
            return report
        }
    }

    /// Prunes one boot's synced, old events and records what was stored below the new watermark.
    private func prune(_ boot: BootRecord, cutoff: Int64, in db: Database) throws -> Int {
        let arguments: StatementArguments = [boot.deviceId, boot.bootCounter, cutoff]
        guard let highest = try Int64.fetchOne(db, sql: """
            SELECT MAX(sequence) FROM consumptionEvent
            WHERE deviceId = ? AND bootCounter = ? AND syncedAt IS NOT NULL AND receivedAt < ?
            """, arguments: arguments)
        else { return 0 }
        var boot = boot
        let deleted = try Set(Int64.fetchAll(db, sql: """
            SELECT sequence FROM consumptionEvent
            WHERE deviceId = ? AND bootCounter = ? AND syncedAt IS NOT NULL AND receivedAt < ?
            """, arguments: arguments))
        if highest > boot.prunedThroughSequence {
            // Sequences between the old watermark and the new one that were never stored become gaps.
            let present = try Int64.fetchAll(db, sql: """
                SELECT sequence FROM consumptionEvent WHERE deviceId = ? AND bootCounter = ? AND sequence > ? AND sequence <= ? ORDER BY sequence
                """, arguments: [boot.deviceId, boot.bootCounter, boot.prunedThroughSequence, highest])
            var expected = boot.prunedThroughSequence + 1
            for sequence in present + [highest + 1] {
                if sequence > expected { boot.prunedGaps.append(BootRecord.SequenceGap(from: expected, through: sequence - 1)) }
                expected = sequence + 1
            }
            boot.prunedThroughSequence = highest
        }
        // An event that arrived into a gap and is pruned now is stored-then-pruned like the others.
        boot.prunedGaps = boot.prunedGaps.flatMap { gap in Self.subtract(deleted, from: gap) }
        try boot.update(db, columns: [BootRecord.Columns.prunedThroughSequence, BootRecord.Columns.prunedGaps])
        try db.execute(sql: """
            DELETE FROM consumptionEvent
            WHERE deviceId = ? AND bootCounter = ? AND syncedAt IS NOT NULL AND receivedAt < ?
            """, arguments: arguments)
        return db.changesCount
    }

    private static func subtract(_ sequences: Set<Int64>, from gap: BootRecord.SequenceGap) -> [BootRecord.SequenceGap] {
        let inside = sequences.filter { gap.contains($0) }.sorted()
        guard !inside.isEmpty else { return [gap] }
        var pieces: [BootRecord.SequenceGap] = []
        var start = gap.from
        for sequence in inside {
            if sequence > start { pieces.append(BootRecord.SequenceGap(from: start, through: sequence - 1)) }
            start = sequence + 1
        }
        if start <= gap.through { pieces.append(BootRecord.SequenceGap(from: start, through: gap.through)) }
        return pieces
    }
}
