import Foundation
import GRDB
import TetherPrimitives

/// The upload state of a sample or a tombstone, which part 2's uploader moves (issue 14 part 2): `pending` →
/// `leased` (with a request id and an expiry) → `uploaded`, or `failed` (retried) or `rejected` (with a reason).
public enum HealthUploadState: String, Codable, Hashable, Sendable, CaseIterable {
    case pending, leased, uploaded, failed, rejected
}

/// The upload columns both `healthSample` and `healthDeletion` carry.
public struct HealthUpload: Hashable, Sendable {
    public var state: HealthUploadState
    public var requestId: String?
    public var leaseExpiresAt: Int64?
    public var attempts: Int
    public var rejectedReason: String?

    init(row: Row) throws {
        guard let state = HealthUploadState(rawValue: row["uploadState"]) else { throw StoreError(.corrupt, "uploadState \(row["uploadState"] as String? ?? "?")") }
        self.state = state
        requestId = row["uploadRequestId"]
        leaseExpiresAt = row["leaseExpiresAt"]
        attempts = row["uploadAttempts"]
        rejectedReason = row["rejectedReason"]
    }
}

/// A row of `healthSample` (migration v6), as the read side returns it.
public struct HealthSampleRecord: Hashable, Sendable, FetchableRecord {
    public static let databaseTableName = "healthSample"

    public var id: Int64
    public var uid: String
    public var dedupKey: String
    public var peripheralId: Int64
    /// The peripheral's registry uid (the read side joins `peripheral`).
    public var peripheralUid: String
    public var sample: HealthSample
    public var deletedAt: Int64?
    public var upload: HealthUpload

    public init(row: Row) throws {
        id = row["id"]
        uid = row["uid"]
        dedupKey = row["dedupKey"]
        peripheralId = row["peripheralId"]
        peripheralUid = row["peripheralUid"]
        func decoded<T: RawRepresentable<String>>(_ column: String) throws -> T {
            guard let value = T(rawValue: row[column]) else { throw StoreError(.corrupt, "healthSample.\(column) \(row[column] as String? ?? "?")") }
            return value
        }
        let status: HealthValueStatus = try decoded("valueStatus")
        let reported = (row["reportedMantissa"] as Int64?).map { HealthDecimal(mantissa: $0, exponent: row["reportedExponent"] ?? 0) }
        let canonical = try (row["canonicalValue"] as String?).map { text in
            guard let value = HealthDecimal(text) else { throw StoreError(.corrupt, "healthSample.canonicalValue \(text)") }
            return value
        }
        sample = HealthSample(
            metricCode: row["metricCode"], occurrence: row["occurrence"],
            value: HealthValue(status: status, reported: reported, reportedUnit: row["reportedUnit"], canonical: canonical, canonicalUnit: row["canonicalUnit"]),
            effectiveAt: Timestamp(nanoseconds: row["effectiveAt"]), deviceTime: row["deviceTime"], timeBasis: try decoded("timeBasis"),
            skewMilliseconds: row["skewMilliseconds"], userIndex: row["userIndex"], recordSequence: row["recordSequence"], epoch: row["epoch"],
            lane: try decoded("lane"), characteristic: row["characteristic"], rawBytes: (row["rawBytes"] as Data?).map { [UInt8]($0) },
            parserVersion: row["parserVersion"], receivedAt: Timestamp(nanoseconds: row["receivedAt"]))
        deletedAt = row["deletedAt"]
        upload = try HealthUpload(row: row)
    }

    public enum Columns {
        public static let id = Column("id")
        public static let uid = Column("uid")
        public static let dedupKey = Column("dedupKey")
        public static let peripheralId = Column("peripheralId")
        public static let metricCode = Column("metricCode")
        public static let effectiveAt = Column("effectiveAt")
        public static let deletedAt = Column("deletedAt")
        public static let uploadState = Column("uploadState")
    }
}

/// A row of `healthIngestCursor`: one epoch of one stream; the stream's cursor is its latest epoch.
public struct HealthIngestCursorRecord: Hashable, Sendable, FetchableRecord {
    public static let databaseTableName = "healthIngestCursor"

    public var peripheralId: Int64
    public var peripheralUid: String
    public var stream: HealthRecordStream
    public var epoch: Int64
    public var kind: HealthCursorKind
    public var position: Int64?
    public var startReason: HealthEpochReason
    public var startedAt: Int64
    public var updatedAt: Int64

    public init(row: Row) throws {
        peripheralId = row["peripheralId"]
        peripheralUid = row["peripheralUid"]
        stream = HealthRecordStream(characteristic: row["characteristic"], userIndex: row["userIndex"])
        epoch = row["epoch"]
        guard let kind = HealthCursorKind(rawValue: row["positionKind"]), let reason = HealthEpochReason(rawValue: row["startReason"]) else {
            throw StoreError(.corrupt, "healthIngestCursor row \(row["id"] as Int64? ?? -1)")
        }
        self.kind = kind
        position = row["position"]
        startReason = reason
        startedAt = row["startedAt"]
        updatedAt = row["updatedAt"]
    }
}

/// Why a sample was deleted (`healthDeletion.reason`).
public enum HealthDeletionReason: String, Codable, Hashable, Sendable, CaseIterable {
    case technician
    case backend
    /// The record is no longer in the device's memory (and was not deleted on the gateway's request).
    case vanishedFromDevice = "vanished-from-device"
    /// Replaced by a corrected sample.
    case correction
}

/// Who asked for a correction.
public enum HealthChangeAuthor: String, Codable, Hashable, Sendable, CaseIterable {
    case technician, backend
}

/// A row of `healthDeletion` with the uids and dedup keys of its samples: a tombstone for part 2 to upload.
public struct HealthDeletionRecord: Hashable, Sendable, FetchableRecord {
    public var uid: String
    public var sampleUid: String
    public var sampleDedupKey: String
    /// The peripheral of the deleted sample; nil where the query did not join it.
    public var peripheralUid: String?
    public var reason: HealthDeletionReason
    /// `technician`, `backend` or `gateway`.
    public var requestedBy: String
    public var replacementSampleUid: String?
    public var note: String?
    public var requestedAt: Int64
    public var upload: HealthUpload

    public init(row: Row) throws {
        uid = row["uid"]
        sampleUid = row["sampleUid"]
        sampleDedupKey = row["sampleDedupKey"]
        peripheralUid = row["peripheralUid"]
        guard let reason = HealthDeletionReason(rawValue: row["reason"]) else { throw StoreError(.corrupt, "healthDeletion.reason \(row["reason"] as String? ?? "?")") }
        self.reason = reason
        requestedBy = row["requestedBy"]
        replacementSampleUid = row["replacementSampleUid"]
        note = row["note"]
        requestedAt = row["requestedAt"]
        upload = try HealthUpload(row: row)
    }
}

/// Rows per upload state, for `tether health` and part 2's metrics.
public struct HealthUploadCounts: Hashable, Sendable {
    public var samples: [HealthUploadState: Int] = [:]
    public var deletions: [HealthUploadState: Int] = [:]
}
