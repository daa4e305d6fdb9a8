import Foundation
import GRDBSQLite
import TetherStore
import TetherPrimitives

/// The health baseline: the same batches (the same sample rows, dedup keys and uids, and the cursor move) written
/// with the raw sqlite3 C API and prepared statements, one transaction per batch, on a database with the same schema
/// and durability (WAL, synchronous=FULL): what SQLite and the disk can do at that batch size and durability with
/// nothing else in the way.
enum RawHealthBaseline {
    /// The same statement `HealthStore` prepares (HealthStore.insertSampleSQL).
    static let insertSample = """
        INSERT INTO healthSample (
            uid, dedupKey, peripheralId, characteristic, metricCode, occurrence, valueStatus, reportedMantissa, reportedExponent,
            reportedUnit, canonicalValue, canonicalUnit, effectiveAt, deviceTime, timeBasis, skewMilliseconds, userIndex,
            recordSequence, epoch, lane, rawBytes, parserVersion, receivedAt)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (dedupKey) DO NOTHING
        """

    /// Commits `batches` (all of peripheral row 1, `peripheralUid`) one transaction each; returns the wall time.
    static func run(path: String, peripheralUid: String, batches: [HealthIngestBatch]) throws -> Duration {
        var connection: OpaquePointer?
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db = connection else {
            throw RawInsertBaseline.Failure(description: "cannot open \(path)")
        }
        defer { sqlite3_close_v2(db) }
        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw RawInsertBaseline.Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))") }
        }
        func prepare(_ sql: String) throws -> OpaquePointer {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw RawInsertBaseline.Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
            }
            return statement
        }
        try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        let insert = try prepare(insertSample)
        let startCursor = try prepare("""
            INSERT INTO healthIngestCursor (peripheralId, characteristic, userIndex, epoch, positionKind, position, startReason, startedAt, updatedAt)
            VALUES (1, ?, NULL, 0, 'sequence', ?, 'first', ?, ?)
            """)
        let moveCursor = try prepare("UPDATE healthIngestCursor SET position = ?, updatedAt = ? WHERE peripheralId = 1 AND epoch = 0")
        defer {
            sqlite3_finalize(insert)
            sqlite3_finalize(startCursor)
            sqlite3_finalize(moveCursor)
        }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        func step(_ statement: OpaquePointer) throws {
            guard sqlite3_step(statement) == SQLITE_DONE else { throw RawInsertBaseline.Failure(description: String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        var random = SplitMix64(seed: 4)
        let clock = ContinuousClock()
        let started = clock.now
        for (index, batch) in batches.enumerated() {
            let now = WallClock.now()
            try exec("BEGIN IMMEDIATE")
            for sample in batch.samples {
                let uid = UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &random))
                let key = HealthDedupKey.make(device: peripheralUid, sample: sample)
                let value = sample.value
                sqlite3_bind_text(insert, 1, uid, -1, transient)
                sqlite3_bind_text(insert, 2, key, -1, transient)
                sqlite3_bind_int64(insert, 3, 1)
                sqlite3_bind_text(insert, 4, sample.characteristic, -1, transient)
                sqlite3_bind_int64(insert, 5, Int64(sample.metricCode))
                sqlite3_bind_int64(insert, 6, Int64(sample.occurrence))
                sqlite3_bind_text(insert, 7, value.status.rawValue, -1, transient)
                if let reported = value.reported {
                    sqlite3_bind_int64(insert, 8, reported.mantissa)
                    sqlite3_bind_int64(insert, 9, Int64(reported.exponent))
                } else {
                    sqlite3_bind_null(insert, 8)
                    sqlite3_bind_null(insert, 9)
                }
                sqlite3_bind_text(insert, 10, value.reportedUnit, -1, transient)
                if let canonical = value.canonical { sqlite3_bind_text(insert, 11, canonical.description, -1, transient) } else { sqlite3_bind_null(insert, 11) }
                sqlite3_bind_text(insert, 12, value.canonicalUnit, -1, transient)
                sqlite3_bind_int64(insert, 13, sample.effectiveAt.nanoseconds)
                if let deviceTime = sample.deviceTime { sqlite3_bind_text(insert, 14, deviceTime, -1, transient) } else { sqlite3_bind_null(insert, 14) }
                sqlite3_bind_text(insert, 15, sample.timeBasis.rawValue, -1, transient)
                if let skew = sample.skewMilliseconds { sqlite3_bind_int64(insert, 16, skew) } else { sqlite3_bind_null(insert, 16) }
                if let user = sample.userIndex { sqlite3_bind_int64(insert, 17, Int64(user)) } else { sqlite3_bind_null(insert, 17) }
                if let sequence = sample.recordSequence { sqlite3_bind_int64(insert, 18, sequence) } else { sqlite3_bind_null(insert, 18) }
                sqlite3_bind_int64(insert, 19, sample.epoch)
                sqlite3_bind_text(insert, 20, sample.lane.rawValue, -1, transient)
                let bytes = sample.rawBytes ?? []
                bytes.withUnsafeBytes { buffer in _ = sqlite3_bind_blob(insert, 21, buffer.baseAddress, Int32(buffer.count), transient) }
                if let version = sample.parserVersion { sqlite3_bind_int64(insert, 22, Int64(version)) } else { sqlite3_bind_null(insert, 22) }
                sqlite3_bind_int64(insert, 23, sample.receivedAt.nanoseconds)
                try step(insert)
            }
            if let position = batch.cursor?.position {
                if index == 0 {
                    sqlite3_bind_text(startCursor, 1, batch.cursor?.stream.characteristic ?? "", -1, transient)
                    sqlite3_bind_int64(startCursor, 2, position)
                    sqlite3_bind_int64(startCursor, 3, now.nanoseconds)
                    sqlite3_bind_int64(startCursor, 4, now.nanoseconds)
                    try step(startCursor)
                } else {
                    sqlite3_bind_int64(moveCursor, 1, position)
                    sqlite3_bind_int64(moveCursor, 2, now.nanoseconds)
                    try step(moveCursor)
                }
            }
            try exec("COMMIT")
        }
        return started.duration(to: clock.now)
    }
}
