import GRDB
import TetherPrimitives

/// Which upload queue: samples (`healthSample`) or tombstones (`healthDeletion`). Both tables carry the same upload
/// columns and the same partial index on them (migration v6), so one set of statements serves both.
public enum HealthUploadKind: String, Hashable, Sendable, CaseIterable {
    case samples
    case deletions

    var table: String {
        switch self {
        case .samples: "healthSample"
        case .deletions: "healthDeletion"
        }
    }

    /// The `healthSample.id` a row of this queue names, by the row's uid (bound as the one argument).
    var sampleIdSQL: String {
        switch self {
        case .samples: "SELECT id FROM healthSample WHERE uid = ?"
        case .deletions: "SELECT sampleId FROM healthDeletion WHERE uid = ?"
        }
    }

    /// The partial index `(uploadState, id) WHERE uploadState <> 'uploaded'` the claim walks.
    var index: String {
        switch self {
        case .samples: "healthSampleUpload"
        case .deletions: "healthDeletionUpload"
        }
    }
}

/// One claimed batch: every row in it is `leased` under `requestId` until `expiresAt`. Results are marked with the
/// same `requestId`; a row whose lease expired and was claimed again carries another id and is not touched.
public struct HealthUploadLease<Item: Hashable & Sendable>: Hashable, Sendable {
    /// A fresh UUIDv7, sent as the request's `upload_request_id`.
    public var requestId: String
    public var expiresAt: Timestamp
    /// Oldest first (by row id).
    public var items: [Item]
}

/// The device a sample came from, as the peripheral registry knows it (Device Information Service strings).
public struct HealthSampleDevice: Hashable, Sendable {
    public var uid: String
    public var identityAddress: String?
    public var manufacturerName: String?
    public var modelNumber: String?
    public var serialNumber: String?
}

/// A claimed sample with what its upload needs beyond the row: the device and, for a correction's replacement, the
/// uid of the sample it replaces (found through `healthDeletion.replacementSampleId`).
public struct HealthSampleClaim: Hashable, Sendable, FetchableRecord {
    public var record: HealthSampleRecord
    public var device: HealthSampleDevice
    public var replacesUid: String?

    public init(row: Row) throws {
        record = try HealthSampleRecord(row: row)
        device = HealthSampleDevice(
            uid: row["peripheralUid"], identityAddress: row["deviceAddress"], manufacturerName: row["deviceManufacturer"],
            modelNumber: row["deviceModel"], serialNumber: row["deviceSerial"])
        replacesUid = row["replacesUid"]
    }
}

/// What the backend's answer means for one row.
public enum HealthUploadVerdict: Hashable, Sendable {
    /// Stored by the server now or before (`applied`, `duplicate`): done for good.
    case uploaded
    /// The server can never store it as sent: kept with the reason, never sent again.
    case rejected(reason: String)
}

/// What marking a batch's results did.
public struct HealthUploadMarks: Hashable, Sendable {
    public var uploaded = 0
    public var rejected = 0
    /// Rows no longer leased under the batch's request id (the lease expired and another upload claimed them):
    /// left as they are.
    public var notHeld = 0

    public init() {}
}

/// Rows still to upload or refused, per state (`uploaded` rows are not counted: the partial index skips them).
public struct HealthUploadBacklog: Hashable, Sendable {
    public var samples: [HealthUploadState: Int] = [:]
    public var deletions: [HealthUploadState: Int] = [:]

    public subscript(kind: HealthUploadKind) -> [HealthUploadState: Int] {
        switch kind {
        case .samples: samples
        case .deletions: deletions
        }
    }
}
