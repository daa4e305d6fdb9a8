import Foundation
import GRDB
import TetherPrimitives

/// Which samples to read: every filter is optional; newest first.
public struct HealthSampleQuery: Hashable, Sendable {
    public var peripheralUid: String?
    /// Any of these MDC codes (a metric with specimen-specific codes, like glucose, has several).
    public var metricCodes: [Int]?
    /// Effective time at or after `from` and before `until`.
    public var from: Timestamp?
    public var until: Timestamp?
    public var includeDeleted = false
    public var limit = 1000

    public init(peripheralUid: String? = nil, metricCodes: [Int]? = nil, from: Timestamp? = nil, until: Timestamp? = nil, includeDeleted: Bool = false, limit: Int = 1000) {
        self.peripheralUid = peripheralUid
        self.metricCodes = metricCodes
        self.from = from
        self.until = until
        self.includeDeleted = includeDeleted
        self.limit = limit
    }
}

/// The read side, for `tether health` and the control API.
extension HealthStore {
    static let sampleColumns = "healthSample.*, peripheral.uid AS peripheralUid"

    public func samples(_ query: HealthSampleQuery = HealthSampleQuery()) throws(StoreError) -> [HealthSampleRecord] {
        try database.read { db in
            var conditions: [String] = []
            var arguments: StatementArguments = []
            if let uid = query.peripheralUid {
                conditions.append("peripheral.uid = ?")
                arguments += [uid]
            }
            if let metrics = query.metricCodes {
                conditions.append("healthSample.metricCode IN (\(metrics.isEmpty ? "NULL" : Array(repeating: "?", count: metrics.count).joined(separator: ", ")))")
                arguments += StatementArguments(metrics)
            }
            if let from = query.from {
                conditions.append("healthSample.effectiveAt >= ?")
                arguments += [from.nanoseconds]
            }
            if let until = query.until {
                conditions.append("healthSample.effectiveAt < ?")
                arguments += [until.nanoseconds]
            }
            if !query.includeDeleted { conditions.append("healthSample.deletedAt IS NULL") }
            arguments += [query.limit]
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            return try HealthSampleRecord.fetchAll(db, sql: """
                SELECT \(Self.sampleColumns) FROM healthSample JOIN peripheral ON peripheral.id = healthSample.peripheralId
                \(filter) ORDER BY healthSample.effectiveAt DESC, healthSample.id DESC LIMIT ?
                """, arguments: arguments)
        }
    }

    public func sample(uid: String) throws(StoreError) -> HealthSampleRecord? {
        try database.read { db in
            try HealthSampleRecord.fetchOne(db, sql: """
                SELECT \(Self.sampleColumns) FROM healthSample JOIN peripheral ON peripheral.id = healthSample.peripheralId WHERE healthSample.uid = ?
                """, arguments: [uid])
        }
    }

    public func sample(dedupKey: String) throws(StoreError) -> HealthSampleRecord? {
        try database.read { db in
            try HealthSampleRecord.fetchOne(db, sql: """
                SELECT \(Self.sampleColumns) FROM healthSample JOIN peripheral ON peripheral.id = healthSample.peripheralId WHERE healthSample.dedupKey = ?
                """, arguments: [dedupKey])
        }
    }

    /// Rows in `healthSample`, deleted ones included when asked.
    public func sampleCount(includeDeleted: Bool = false) throws(StoreError) -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM healthSample" + (includeDeleted ? "" : " WHERE deletedAt IS NULL")) ?? 0
        }
    }

    /// Each stream's cursor (its latest epoch), of one peripheral or all.
    public func cursors(peripheralUid: String? = nil) throws(StoreError) -> [HealthIngestCursorRecord] {
        try database.read { db in
            try HealthIngestCursorRecord.fetchAll(db, sql: """
                SELECT c.*, peripheral.uid AS peripheralUid FROM healthIngestCursor c JOIN peripheral ON peripheral.id = c.peripheralId
                WHERE (? IS NULL OR peripheral.uid = ?)
                  AND c.epoch = (SELECT max(epoch) FROM healthIngestCursor l
                                 WHERE l.peripheralId = c.peripheralId AND l.characteristic = c.characteristic
                                   AND ifnull(l.userIndex, -1) = ifnull(c.userIndex, -1))
                ORDER BY c.peripheralId, c.characteristic, ifnull(c.userIndex, -1)
                """, arguments: [peripheralUid, peripheralUid])
        }
    }

    /// Every epoch of one stream, oldest first: where each numbering started and how far it got.
    public func epochs(peripheralUid: String, stream: HealthRecordStream) throws(StoreError) -> [HealthIngestCursorRecord] {
        try database.read { db in
            try HealthIngestCursorRecord.fetchAll(db, sql: """
                SELECT c.*, peripheral.uid AS peripheralUid FROM healthIngestCursor c JOIN peripheral ON peripheral.id = c.peripheralId
                WHERE peripheral.uid = ? AND c.characteristic = ? AND ifnull(c.userIndex, -1) = ifnull(?, -1)
                ORDER BY c.epoch
                """, arguments: [peripheralUid, stream.characteristic, stream.userIndex])
        }
    }

    /// For each record key of one epoch of a device's record stream, up to `through`: whether the backend has
    /// acknowledged (`uploaded`: applied or duplicate) every sample stored under the key, from any of
    /// `characteristics` (the records' and their companions'), tombstoned samples included. The facts of the
    /// cold lane's deletion rule (HealthProfiles' RecordDeletionRule): a key with one sample not acknowledged is
    /// not acknowledged. One pass over the device's samples (index `healthSampleSeries` leads with the peripheral).
    public func recordAcknowledgements(
        peripheralUid: String, characteristics: [String], epoch: Int64, through: Int64
    ) throws(StoreError) -> [Int64: Bool] {
        guard !characteristics.isEmpty else { return [:] }
        return try database.read { db in
            let placeholders = Array(repeating: "?", count: characteristics.count).joined(separator: ", ")
            var arguments: StatementArguments = [peripheralUid, epoch, through]
            arguments += StatementArguments(characteristics)
            var keys: [Int64: Bool] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT s.recordSequence AS recordKey, MIN(s.uploadState = 'uploaded') AS acknowledged
                FROM healthSample s JOIN peripheral ON peripheral.id = s.peripheralId
                WHERE peripheral.uid = ? AND s.epoch = ? AND s.recordSequence IS NOT NULL AND s.recordSequence <= ?
                  AND s.characteristic IN (\(placeholders))
                GROUP BY s.recordSequence
                """, arguments: arguments) {
                keys[row["recordKey"]] = (row["acknowledged"] as Int64? ?? 0) == 1
            }
            return keys
        }
    }

    /// What the store knows of one epoch of a device's record stream up to `through`, for the look for vanished
    /// records (RecordTransfer rule 8): the lowest record key it stored a sample under, and the keys already found
    /// gone from the device (a `vanished-from-device` tombstone under the key and no undeleted sample left there).
    public func recordKeyFacts(
        peripheralUid: String, characteristics: [String], epoch: Int64, through: Int64
    ) throws(StoreError) -> (lowest: Int64?, gone: Set<Int64>) {
        guard !characteristics.isEmpty else { return (nil, []) }
        return try database.read { db in
            var arguments: StatementArguments = [peripheralUid, epoch, through]
            arguments += StatementArguments(characteristics)
            let filter = """
                FROM healthSample s JOIN peripheral ON peripheral.id = s.peripheralId
                WHERE peripheral.uid = ? AND s.epoch = ? AND s.recordSequence IS NOT NULL AND s.recordSequence <= ?
                  AND s.characteristic IN (\(Array(repeating: "?", count: characteristics.count).joined(separator: ", ")))
                """
            let lowest = try Int64.fetchOne(db, sql: "SELECT MIN(s.recordSequence) " + filter, arguments: arguments)
            let gone = try Int64.fetchAll(db, sql: """
                SELECT s.recordSequence \(filter.replacingOccurrences(of: "JOIN peripheral", with: "LEFT JOIN healthDeletion d ON d.sampleId = s.id JOIN peripheral"))
                GROUP BY s.recordSequence
                HAVING COALESCE(SUM(d.reason = 'vanished-from-device'), 0) > 0 AND SUM(s.deletedAt IS NULL) = 0
                """, arguments: arguments)
            return (lowest, Set(gone))
        }
    }

    /// The uids of the undeleted samples stored under `recordKeys` in one epoch of a device's record stream (the
    /// record's and its companions'): what a record that vanished from the device takes with it (issue 14, the
    /// change lane; RecordTransfer rule 8).
    public func undeletedSampleUids(
        peripheralUid: String, characteristics: [String], epoch: Int64, recordKeys: [Int64]
    ) throws(StoreError) -> [String] {
        guard !characteristics.isEmpty, !recordKeys.isEmpty else { return [] }
        return try database.read { db in
            var arguments: StatementArguments = [peripheralUid, epoch]
            arguments += StatementArguments(characteristics)
            arguments += StatementArguments(recordKeys)
            return try String.fetchAll(db, sql: """
                SELECT s.uid FROM healthSample s JOIN peripheral ON peripheral.id = s.peripheralId
                WHERE peripheral.uid = ? AND s.epoch = ? AND s.deletedAt IS NULL
                  AND s.characteristic IN (\(Array(repeating: "?", count: characteristics.count).joined(separator: ", ")))
                  AND s.recordSequence IN (\(Array(repeating: "?", count: recordKeys.count).joined(separator: ", ")))
                ORDER BY s.recordSequence, s.id
                """, arguments: arguments)
        }
    }

    /// The raw bytes the samples stored under one record key of one epoch of a device's record characteristic
    /// arrived in (one value per record: its samples share it), deleted samples included: what a device's record
    /// under that key is compared with (RecordAccessClient rule 4).
    public func recordBytes(peripheralUid: String, characteristic: String, epoch: Int64, recordKey: Int64) throws(StoreError) -> [[UInt8]] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT DISTINCT s.rawBytes FROM healthSample s JOIN peripheral ON peripheral.id = s.peripheralId
                WHERE peripheral.uid = ? AND s.characteristic = ? AND s.epoch = ? AND s.recordSequence = ? AND s.rawBytes IS NOT NULL
                """, arguments: [peripheralUid, characteristic, epoch, recordKey]
            ).map { row in
                let data: Data = row["rawBytes"]
                return Array(data)
            }
        }
    }

    /// The tombstone that deleted the sample `sampleUid`, if any (a sample is deleted once).
    public func deletion(ofSampleUid sampleUid: String) throws(StoreError) -> HealthDeletionRecord? {
        try database.read { db in
            try HealthDeletionRecord.fetchOne(db, sql: "SELECT \(Self.deletionColumns) \(Self.deletionJoins) WHERE s.uid = ?", arguments: [sampleUid])
        }
    }

    /// Tombstones, oldest first, of one upload state or all, of one peripheral or all.
    public func deletions(state: HealthUploadState? = nil, peripheralUid: String? = nil, limit: Int = 1000) throws(StoreError) -> [HealthDeletionRecord] {
        try database.read { db in
            try HealthDeletionRecord.fetchAll(db, sql: """
                SELECT \(Self.deletionColumns) \(Self.deletionJoins)
                WHERE (? IS NULL OR d.uploadState = ?) AND (? IS NULL OR p.uid = ?) ORDER BY d.id LIMIT ?
                """, arguments: [state?.rawValue, state?.rawValue, peripheralUid, peripheralUid, limit])
        }
    }

    /// One tombstone by its uid.
    public func deletion(uid: String) throws(StoreError) -> HealthDeletionRecord? {
        try database.read { db in
            try HealthDeletionRecord.fetchOne(db, sql: "SELECT \(Self.deletionColumns) \(Self.deletionJoins) WHERE d.uid = ?", arguments: [uid])
        }
    }

    static let deletionColumns = "d.*, s.uid AS sampleUid, s.dedupKey AS sampleDedupKey, r.uid AS replacementSampleUid, p.uid AS peripheralUid"
    static let deletionJoins = """
        FROM healthDeletion d JOIN healthSample s ON s.id = d.sampleId JOIN peripheral p ON p.id = s.peripheralId
        LEFT JOIN healthSample r ON r.id = d.replacementSampleId
        """

    public func uploadCounts() throws(StoreError) -> HealthUploadCounts {
        try database.read { db in
            var counts = HealthUploadCounts()
            for (table, keyPath) in [("healthSample", \HealthUploadCounts.samples), ("healthDeletion", \HealthUploadCounts.deletions)] {
                for row in try Row.fetchAll(db, sql: "SELECT uploadState, COUNT(*) AS n FROM \(table) GROUP BY uploadState") {
                    guard let state = HealthUploadState(rawValue: row["uploadState"]) else { continue }
                    counts[keyPath: keyPath][state] = row["n"]
                }
            }
            return counts
        }
    }
}
