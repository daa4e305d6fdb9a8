import Foundation
import GRDB
import TetherPrimitives

/// The upload side of the health tables (issue 15; docs/design/health.md, "Upload"): batches of samples and
/// tombstones claimed under leases, and the backend's answers marked back. `GatewayDatabase` owns the connection;
/// this is a view over it whose writes are one transaction each, like `Outbox`.
///
/// Rules (every state move of `uploadState` lives in this file):
/// 1. Claimable: `pending`, `failed`, and `leased` with an expired lease (an upload that crashed comes back).
///    Oldest first by row id. `uploaded` and `rejected` are final.
/// 2. A claim sets `leased`, a fresh `uploadRequestId` (UUIDv7) and `leaseExpiresAt = now + leaseDuration`, and
///    counts an attempt (`uploadAttempts + 1`: the table's CHECK wants every row past `pending` to have one; a
///    lease that expires counts as the attempt it was).
/// 3. Results are marked in ONE transaction and only on rows still `leased` under the batch's request id: a late
///    answer to an upload whose lease expired and was claimed again changes nothing.
///    `uploaded` (applied or duplicate) and `rejected` (with the server's reason) are final; a failed request
///    makes its rows `failed`, claimable by the next run.
/// 4. A sample deleted before it was uploaded is still uploaded, then its tombstone: the backend sees the reading
///    and its deletion, the same history the gateway keeps (the row stays, marked deleted).
/// 5. Marking a sample or tombstone `uploaded` makes its sample's projection key stale in the same transaction
///    (`HealthProjections`, rule 1: the dirty keys the projection pull fetches).
public struct HealthUploadQueue: Sendable {
    public let database: GatewayDatabase
    /// How long a claim is exclusive: longer than a request can take, so that only a dead upload loses it.
    public let leaseDuration: Duration

    public init(database: GatewayDatabase, leaseDuration: Duration = .seconds(120)) {
        self.database = database
        self.leaseDuration = leaseDuration
    }

    // MARK: - Claims

    /// Claims up to `limit` samples (rule 1, 2); `nil` when none is due.
    public func claimSamples(
        limit: Int = 500, now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws(StoreError) -> HealthUploadLease<HealthSampleClaim>? {
        try claim(.samples, limit: limit, now: now, using: &random) { db, requestId in
            try HealthSampleClaim.fetchAll(db, sql: """
                SELECT s.*, p.uid AS peripheralUid, p.identityAddress AS deviceAddress, p.manufacturerName AS deviceManufacturer,
                       p.modelNumber AS deviceModel, p.serialNumber AS deviceSerial, o.uid AS replacesUid
                FROM healthSample s JOIN peripheral p ON p.id = s.peripheralId
                LEFT JOIN healthDeletion d ON d.replacementSampleId = s.id
                LEFT JOIN healthSample o ON o.id = d.sampleId
                WHERE s.uploadState <> 'uploaded' AND s.uploadState = 'leased' AND s.uploadRequestId = ?
                ORDER BY s.id
                """, arguments: [requestId])
        }
    }

    /// Claims up to `limit` tombstones (rule 1, 2); `nil` when none is due. The uploader claims them after the
    /// samples (a run drains samples first), so a tombstone normally follows its sample; the server keeps one for a
    /// sample it has not seen, so nothing waits on it.
    public func claimDeletions(
        limit: Int = 500, now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws(StoreError) -> HealthUploadLease<HealthDeletionRecord>? {
        try claim(.deletions, limit: limit, now: now, using: &random) { db, requestId in
            try HealthDeletionRecord.fetchAll(db, sql: """
                SELECT d.*, s.uid AS sampleUid, s.dedupKey AS sampleDedupKey, r.uid AS replacementSampleUid
                FROM healthDeletion d JOIN healthSample s ON s.id = d.sampleId LEFT JOIN healthSample r ON r.id = d.replacementSampleId
                WHERE d.uploadState <> 'uploaded' AND d.uploadState = 'leased' AND d.uploadRequestId = ?
                ORDER BY d.id
                """, arguments: [requestId])
        }
    }

    private func claim<Item>(
        _ kind: HealthUploadKind, limit: Int, now: Timestamp, using random: inout some RandomNumberGenerator,
        fetch: @escaping (Database, String) throws -> [Item]
    ) throws(StoreError) -> HealthUploadLease<Item>? {
        guard limit > 0 else { return nil }
        let requestId = UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &random))
        let expiresAt = now.advanced(by: leaseDuration)
        let items = try database.write { db in
            try db.execute(sql: Self.claimSQL(kind), arguments: ["request": requestId, "expires": expiresAt.nanoseconds, "now": now.nanoseconds, "limit": limit])
            return db.changesCount == 0 ? [] : try fetch(db, requestId)
        }
        return items.isEmpty ? nil : HealthUploadLease(requestId: requestId, expiresAt: expiresAt, items: items)
    }

    /// Each state is read through the partial index in id order and stops at the limit, so a claim touches only
    /// the rows it takes however many are queued (one `IN (...) ORDER BY id` would collect and sort them all). The
    /// repeated `uploadState <> 'uploaded'` is the index's own condition: SQLite uses a partial index only for a
    /// query whose WHERE contains it, and `INDEXED BY` makes that a hard error rather than a silent table scan.
    static func claimSQL(_ kind: HealthUploadKind) -> String {
        let (table, index) = (kind.table, kind.index)
        func ready(_ condition: String) -> String {
            "SELECT id FROM (SELECT id FROM \(table) INDEXED BY \(index) WHERE uploadState <> 'uploaded' AND \(condition) ORDER BY id LIMIT :limit)"
        }
        return """
            UPDATE \(table)
            SET uploadState = 'leased', uploadRequestId = :request, leaseExpiresAt = :expires, uploadAttempts = uploadAttempts + 1
            WHERE id IN (
                \(ready("uploadState = 'leased' AND leaseExpiresAt <= :now"))
                UNION ALL \(ready("uploadState = 'failed'"))
                UNION ALL \(ready("uploadState = 'pending'"))
                ORDER BY id LIMIT :limit)
            """
    }

    // MARK: - Results

    /// Marks the backend's verdicts for a batch, by row uid, in one transaction (rule 3). Rows of the batch without a
    /// verdict are left leased (their lease runs out and they come back).
    @discardableResult
    public func mark(_ kind: HealthUploadKind, requestId: String, verdicts: [(uid: String, verdict: HealthUploadVerdict)]) throws(StoreError) -> HealthUploadMarks {
        guard !verdicts.isEmpty else { return HealthUploadMarks() }
        let held = "uid = :uid AND uploadState = 'leased' AND uploadRequestId = :request"
        let uploadedSQL = "UPDATE \(kind.table) SET uploadState = 'uploaded', leaseExpiresAt = NULL WHERE \(held)"
        let rejectedSQL = "UPDATE \(kind.table) SET uploadState = 'rejected', leaseExpiresAt = NULL, rejectedReason = :reason WHERE \(held)"
        return try database.write { db in
            var marks = HealthUploadMarks()
            for (uid, verdict) in verdicts {
                switch verdict {
                case .uploaded:
                    try db.cachedStatement(sql: uploadedSQL).execute(arguments: ["uid": uid, "request": requestId])
                    guard db.changesCount == 1 else {
                        marks.notHeld += 1
                        continue
                    }
                    marks.uploaded += 1
                    // Rule 5: the server's samples under the key changed (or may have: a duplicate), in this transaction.
                    try HealthProjections.markStale(sampleIdSQL: kind.sampleIdSQL, arguments: [uid], db)
                case .rejected(let reason):
                    // The column refuses an empty reason: a server that gave none still rejected.
                    let text = reason.isEmpty ? "rejected by the server without a reason" : reason
                    try db.cachedStatement(sql: rejectedSQL).execute(arguments: ["uid": uid, "request": requestId, "reason": text])
                    if db.changesCount == 1 { marks.rejected += 1 } else { marks.notHeld += 1 }
                }
            }
            return marks
        }
    }

    /// The batch's request failed (no usable answer): its rows still held become `failed` (rule 3). Returns how many.
    @discardableResult
    public func fail(_ kind: HealthUploadKind, requestId: String) throws(StoreError) -> Int {
        try database.write { db in
            try db.execute(
                sql: "UPDATE \(kind.table) SET uploadState = 'failed', leaseExpiresAt = NULL WHERE uploadState <> 'uploaded' AND uploadState = 'leased' AND uploadRequestId = ?",
                arguments: [requestId])
            return db.changesCount
        }
    }

    // MARK: - Reading

    /// Rows per state other than `uploaded`, through the partial indexes (cheap with millions uploaded).
    public func backlog() throws(StoreError) -> HealthUploadBacklog {
        try database.read { db in
            var backlog = HealthUploadBacklog()
            for kind in HealthUploadKind.allCases {
                var counts: [HealthUploadState: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT uploadState, COUNT(*) AS n FROM \(kind.table) WHERE uploadState <> 'uploaded' GROUP BY uploadState") {
                    guard let state = HealthUploadState(rawValue: row["uploadState"]) else { continue }
                    counts[state] = row["n"]
                }
                switch kind {
                case .samples: backlog.samples = counts
                case .deletions: backlog.deletions = counts
                }
            }
            return backlog
        }
    }
}
