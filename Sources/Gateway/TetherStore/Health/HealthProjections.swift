import GRDB
import TetherPrimitives

/// The gateway's copy of the server's daily health rollups (issue 15; docs/design/health.md, "Projections") and
/// their freshness. `GatewayDatabase` owns the connection; this is a view over it whose writes are one transaction
/// each, like `HealthUploadQueue` (which marks keys stale inside its own transactions through `markStale`).
///
/// Rules (every move of `freshness` lives in this file):
/// 1. Touch: an upload the server acknowledged (a sample `uploaded`, a tombstone `uploaded`) makes the sample's key
///    `stale` in the same transaction as the mark, whatever its state: a key touched while `computing` loses its
///    claim, so the answer in flight cannot make it `fresh` (it may have been computed before the touch).
/// 2. Claim: `stale` keys, and `computing` ones whose claim expired (a pull that died), oldest first, become
///    `computing` under a fresh claim token until `now + claimDuration`.
/// 3. Answer: a rollup is written to its key only while the key is still `computing` under the same token, and
///    makes it `fresh`; a key no longer held (touched, or claimed again after expiry) keeps its state.
/// 4. Failure: a pull that got no answer gives its keys back (`stale`), claimable at once.
public struct HealthProjections: Sendable {
    public let database: GatewayDatabase
    /// How long a claim is exclusive: longer than a request can take, so that only a dead pull loses it.
    public let claimDuration: Duration

    public init(database: GatewayDatabase, claimDuration: Duration = .seconds(120)) {
        self.database = database
        self.claimDuration = claimDuration
    }

    /// The key of a stored projection (the contract's `HealthProjectionKey`; the store does not depend on it).
    public struct Key: Hashable, Sendable {
        public var deviceUid: String
        public var userIndex: Int?
        public var metricCode: Int
        /// UTC day, `YYYY-MM-DD`.
        public var day: String

        public init(deviceUid: String, userIndex: Int?, metricCode: Int, day: String) {
            self.deviceUid = deviceUid
            self.userIndex = userIndex
            self.metricCode = metricCode
            self.day = day
        }
    }

    /// A rollup as the server answered it (numerals as text).
    public struct Rollup: Hashable, Sendable {
        public var count: Int
        public var specialCount: Int
        public var otherUnitCount: Int
        public var unit: String?
        public var min: String?
        public var max: String?
        public var sum: String?
        public var mean: String?
        public var lastValue: String?
        public var lastEffectiveAt: Int64?
        public var revision: String
        public var computedAt: Int64

        public init(
            count: Int, specialCount: Int, otherUnitCount: Int, unit: String?, min: String?, max: String?, sum: String?, mean: String?,
            lastValue: String?, lastEffectiveAt: Int64?, revision: String, computedAt: Int64
        ) {
            self.count = count
            self.specialCount = specialCount
            self.otherUnitCount = otherUnitCount
            self.unit = unit
            self.min = min
            self.max = max
            self.sum = sum
            self.mean = mean
            self.lastValue = lastValue
            self.lastEffectiveAt = lastEffectiveAt
            self.revision = revision
            self.computedAt = computedAt
        }
    }

    public enum Freshness: String, Hashable, Sendable {
        case stale
        case computing
        case fresh
    }

    /// One stored projection: its key, freshness, and the last rollup fetched (`nil` before the first).
    public struct Entry: Hashable, Sendable {
        public var key: Key
        public var freshness: Freshness
        public var rollup: Rollup?
        public var fetchedAt: Timestamp?
    }

    // MARK: - Touch (rule 1)

    /// The UTC day of `effectiveAt` (nanoseconds), floored: the same day as the contract's `HealthProjectionDay`
    /// (SQLite's `strftime` on the proleptic Gregorian calendar; TetherSync's tests hold the two together).
    static let daySQL = "strftime('%Y-%m-%d', (s.effectiveAt - (((s.effectiveAt % 86400000000000) + 86400000000000) % 86400000000000)) / 1000000000, 'unixepoch')"

    /// Makes stale the key of each sample named (by `healthSample.id` in `sampleIdSQL`, bound to `arguments`);
    /// called inside the transaction that marks the upload.
    static func markStale(sampleIdSQL: String, arguments: StatementArguments, _ db: Database) throws {
        let keys = try Row.fetchAll(
            db,
            sql: """
                SELECT p.uid AS deviceUid, s.userIndex, s.metricCode, \(daySQL) AS day
                FROM healthSample s JOIN peripheral p ON p.id = s.peripheralId WHERE s.id = (\(sampleIdSQL))
                """, arguments: arguments)
        for row in keys {
            let arguments: StatementArguments = [row["deviceUid"], row["userIndex"], row["metricCode"], row["day"]]
            try db.cachedStatement(sql: """
                UPDATE healthProjection SET freshness = 'stale', claimToken = NULL, claimExpiresAt = NULL
                WHERE deviceUid = ? AND ifnull(userIndex, -1) = ifnull(?, -1) AND metricCode = ? AND day = ?
                """).execute(arguments: arguments)
            if db.changesCount == 0 {
                try db.cachedStatement(sql: "INSERT INTO healthProjection (deviceUid, userIndex, metricCode, day) VALUES (?, ?, ?, ?)")
                    .execute(arguments: arguments)
            }
        }
    }

    // MARK: - Pull (rules 2-4)

    /// Claims up to `limit` keys to pull (rule 2); `nil` when none is due.
    public func claim(
        limit: Int = 200, now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws(StoreError) -> (token: String, keys: [Key])? {
        guard limit > 0 else { return nil }
        let token = UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &random))
        let keys = try database.write { db -> [Key] in
            try db.execute(
                sql: """
                    UPDATE healthProjection SET freshness = 'computing', claimToken = :token, claimExpiresAt = :expires
                    WHERE id IN (
                        SELECT id FROM healthProjection INDEXED BY healthProjectionDue
                        WHERE freshness <> 'fresh' AND (freshness = 'stale' OR claimExpiresAt <= :now)
                        ORDER BY id LIMIT :limit)
                    """,
                arguments: ["token": token, "expires": now.advanced(by: claimDuration).nanoseconds, "now": now.nanoseconds, "limit": limit])
            // Nothing claimed is nothing claimed, even should the token repeat a live claim's (a restarted pull with the
            // same seed at the same instant): those keys are that claim's.
            guard db.changesCount > 0 else { return [] }
            return try Row.fetchAll(db, sql: "SELECT deviceUid, userIndex, metricCode, day FROM healthProjection WHERE claimToken = ? ORDER BY id", arguments: [token])
                .map { Key(deviceUid: $0["deviceUid"], userIndex: $0["userIndex"], metricCode: $0["metricCode"], day: $0["day"]) }
        }
        return keys.isEmpty ? nil : (token, keys)
    }

    /// Writes the server's rollups (rule 3) in one transaction. Returns how many keys became fresh; the others were
    /// touched or claimed again meanwhile and stay as they are.
    @discardableResult
    public func store(_ answers: [(key: Key, rollup: Rollup)], token: String, fetchedAt: Timestamp) throws(StoreError) -> Int {
        try database.write { db in
            var fresh = 0
            let statement = try db.cachedStatement(sql: """
                UPDATE healthProjection SET freshness = 'fresh', claimToken = NULL, claimExpiresAt = NULL,
                    sampleCount = ?, specialCount = ?, otherUnitCount = ?, unit = ?, minValue = ?, maxValue = ?, sumValue = ?,
                    meanValue = ?, lastValue = ?, lastEffectiveAt = ?, revision = ?, computedAt = ?, fetchedAt = ?
                WHERE claimToken = ? AND deviceUid = ? AND ifnull(userIndex, -1) = ifnull(?, -1) AND metricCode = ? AND day = ?
                """)
            for (key, rollup) in answers {
                let values: [(any DatabaseValueConvertible)?] = [
                    rollup.count, rollup.specialCount, rollup.otherUnitCount, rollup.unit, rollup.min, rollup.max, rollup.sum, rollup.mean,
                    rollup.lastValue, rollup.lastEffectiveAt, rollup.revision, rollup.computedAt, fetchedAt.nanoseconds,
                    token, key.deviceUid, key.userIndex, key.metricCode, key.day,
                ]
                try statement.execute(arguments: StatementArguments(values))
                fresh += db.changesCount
            }
            return fresh
        }
    }

    /// The pull under `token` failed: its keys still held go back to `stale` (rule 4). Returns how many.
    @discardableResult
    public func release(token: String) throws(StoreError) -> Int {
        try database.write { db in
            try db.execute(
                sql: "UPDATE healthProjection SET freshness = 'stale', claimToken = NULL, claimExpiresAt = NULL WHERE claimToken = ?", arguments: [token])
            return db.changesCount
        }
    }

    // MARK: - Reading

    /// Every projection (or one device's), by device, user, metric and day.
    public func entries(deviceUid: String? = nil) throws(StoreError) -> [Entry] {
        try database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM healthProjection WHERE (:device IS NULL OR deviceUid = :device)
                    ORDER BY deviceUid, ifnull(userIndex, -1), metricCode, day
                    """, arguments: ["device": deviceUid]
            ).map(Self.entry)
        }
    }

    static func entry(_ row: Row) -> Entry {
        let key = Key(deviceUid: row["deviceUid"], userIndex: row["userIndex"], metricCode: row["metricCode"], day: row["day"])
        let fetchedAt: Int64? = row["fetchedAt"]
        var rollup: Rollup?
        if let count: Int = row["sampleCount"], let revision: String = row["revision"] {
            rollup = Rollup(
                count: count, specialCount: row["specialCount"] ?? 0, otherUnitCount: row["otherUnitCount"] ?? 0, unit: row["unit"],
                min: row["minValue"], max: row["maxValue"], sum: row["sumValue"], mean: row["meanValue"], lastValue: row["lastValue"],
                lastEffectiveAt: row["lastEffectiveAt"], revision: revision, computedAt: row["computedAt"] ?? 0)
        }
        return Entry(
            key: key, freshness: Freshness(rawValue: row["freshness"]) ?? .stale, rollup: rollup,
            fetchedAt: fetchedAt.map(Timestamp.init(nanoseconds:)))
    }
}
