import Foundation

/// The health upload contract (issue 15; docs/specs/sync-api.yaml, "Health"): how a gateway moves the samples of its
/// health tables and their tombstones to the backend exactly once. Both sides use these types; the spec is the
/// authority.
///
/// A sample's `uid` (UUIDv7, minted by the gateway) is its idempotency key, and its `dedup_key` names the reading
/// (`HealthDedupKey`); both are unique per tenant on the server. A batch carries an `upload_request_id` so the
/// server can log and the gateway can match a retry to its lease; it is not what deduplicates.
public enum HealthUpload {
    public static let samplesPath = "/v1/health/samples"
    public static let deletionsPath = "/v1/health/deletions"
    public static let maximumSamplesPerRequest = 1000
    public static let maximumDeletionsPerRequest = 1000
}

/// The device a sample came from, as the gateway knows it. `uid` is the gateway's peripheral uid (stable for the
/// peripheral's life on that gateway); the rest is what the device's Device Information Service said.
public struct HealthDeviceReference: Codable, Hashable, Sendable {
    public var uid: String
    /// The Bluetooth identity address (`AA:BB:CC:DD:EE:FF`), when the device has one.
    public var address: String?
    public var manufacturer: String?
    public var model: String?
    public var serial: String?

    public init(uid: String, address: String? = nil, manufacturer: String? = nil, model: String? = nil, serial: String? = nil) {
        self.uid = uid
        self.address = address
        self.manufacturer = manufacturer
        self.model = model
        self.serial = serial
    }
}

/// One health sample on the wire (`HealthSample` in the spec). Values are exact decimals: `reported` as the device
/// sent it (mantissa · 10^exponent, UCUM unit), `canonical` converted exactly (a plain decimal numeral), so that no
/// binary floating point ever touches a medical value. Times are integer nanoseconds since the Unix epoch.
public struct HealthSampleUpload: Codable, Hashable, Sendable {
    public struct Reported: Codable, Hashable, Sendable {
        /// `nil` unless `value_status` is `number`.
        public var mantissa: Int64?
        public var exponent: Int32?
        public var unit: String

        public init(mantissa: Int64?, exponent: Int32?, unit: String) {
            self.mantissa = mantissa
            self.exponent = exponent
            self.unit = unit
        }
    }

    public struct Canonical: Codable, Hashable, Sendable {
        /// A plain decimal numeral (`120.5`); `nil` unless `value_status` is `number`.
        public var value: String?
        public var unit: String

        public init(value: String?, unit: String) {
            self.value = value
            self.unit = unit
        }
    }

    public var uid: String
    public var dedupKey: String
    public var device: HealthDeviceReference
    /// The characteristic, 128-bit lowercase.
    public var characteristic: String
    /// IEEE 11073-10101 MDC code, `partition << 16 | term code`.
    public var metricCode: Int
    public var occurrence: Int
    /// `number`, `nan`, `nres`, `positive-infinity`, `negative-infinity`, `reserved` (IEEE 11073-20601 Annex F.8).
    public var valueStatus: String
    public var reported: Reported
    public var canonical: Canonical
    public var effectiveAt: Int64
    public var deviceTime: String?
    /// How `effective_at` was derived (`HealthTimeBasis` raw values).
    public var timeBasis: String
    public var skewMilliseconds: Int64?
    public var userIndex: Int?
    public var recordSequence: Int64?
    public var epoch: Int64
    /// `hot`, `cold` or `change`.
    public var lane: String
    public var receivedAt: Int64
    /// The raw characteristic value, lowercase hex; `nil` for a correction.
    public var rawBytes: String?
    public var parserVersion: Int?
    /// For a correction: the uid of the sample this one replaces (its tombstone comes in a deletions request).
    public var replaces: String?

    public init(
        uid: String, dedupKey: String, device: HealthDeviceReference, characteristic: String, metricCode: Int, occurrence: Int,
        valueStatus: String, reported: Reported, canonical: Canonical, effectiveAt: Int64, deviceTime: String?, timeBasis: String,
        skewMilliseconds: Int64?, userIndex: Int?, recordSequence: Int64?, epoch: Int64, lane: String, receivedAt: Int64,
        rawBytes: String?, parserVersion: Int?, replaces: String?
    ) {
        self.uid = uid
        self.dedupKey = dedupKey
        self.device = device
        self.characteristic = characteristic
        self.metricCode = metricCode
        self.occurrence = occurrence
        self.valueStatus = valueStatus
        self.reported = reported
        self.canonical = canonical
        self.effectiveAt = effectiveAt
        self.deviceTime = deviceTime
        self.timeBasis = timeBasis
        self.skewMilliseconds = skewMilliseconds
        self.userIndex = userIndex
        self.recordSequence = recordSequence
        self.epoch = epoch
        self.lane = lane
        self.receivedAt = receivedAt
        self.rawBytes = rawBytes
        self.parserVersion = parserVersion
        self.replaces = replaces
    }

    enum CodingKeys: String, CodingKey {
        case uid, device, characteristic, occurrence, reported, canonical, epoch, lane, replaces
        case dedupKey = "dedup_key"
        case metricCode = "metric_code"
        case valueStatus = "value_status"
        case effectiveAt = "effective_at"
        case deviceTime = "device_time"
        case timeBasis = "time_basis"
        case skewMilliseconds = "skew_ms"
        case userIndex = "user_index"
        case recordSequence = "record_sequence"
        case receivedAt = "received_at"
        case rawBytes = "raw_bytes"
        case parserVersion = "parser_version"
    }
}

/// `POST /v1/health/samples`.
public struct HealthSamplesRequest: Codable, Hashable, Sendable {
    public var uploadRequestId: String
    public var samples: [HealthSampleUpload]

    public init(uploadRequestId: String, samples: [HealthSampleUpload]) {
        self.uploadRequestId = uploadRequestId
        self.samples = samples
    }

    enum CodingKeys: String, CodingKey {
        case samples
        case uploadRequestId = "upload_request_id"
    }
}

/// A tombstone on the wire (`HealthDeletion` in the spec). The server keeps it even when it has not seen the sample
/// yet, so that the sample, arriving later, is stored deleted: uploads of samples and deletions need no order.
public struct HealthDeletionUpload: Codable, Hashable, Sendable {
    public var uid: String
    public var sampleUid: String
    /// `technician`, `backend`, `vanished-from-device` or `correction`.
    public var reason: String
    /// `technician`, `backend` or `gateway`.
    public var requestedBy: String
    /// For a correction, the uid of the replacement sample.
    public var replacementSampleUid: String?
    public var note: String?
    public var requestedAt: Int64
    /// The deleted sample's `dedup_key`: where the server holds the same reading under another uid (the gateway lost
    /// its database and read the device again; the server answered the re-read sample `duplicate`), the tombstone
    /// deletes that copy. A lookup, not part of the tombstone: a retry with or without it is the same tombstone.
    public var sampleDedupKey: String?

    public init(
        uid: String, sampleUid: String, reason: String, requestedBy: String, replacementSampleUid: String?, note: String?,
        requestedAt: Int64, sampleDedupKey: String? = nil
    ) {
        self.uid = uid
        self.sampleUid = sampleUid
        self.reason = reason
        self.requestedBy = requestedBy
        self.replacementSampleUid = replacementSampleUid
        self.note = note
        self.requestedAt = requestedAt
        self.sampleDedupKey = sampleDedupKey
    }

    enum CodingKeys: String, CodingKey {
        case uid, reason, note
        case sampleUid = "sample_uid"
        case sampleDedupKey = "sample_dedup_key"
        case requestedBy = "requested_by"
        case replacementSampleUid = "replacement_sample_uid"
        case requestedAt = "requested_at"
    }
}

/// `POST /v1/health/deletions`.
public struct HealthDeletionsRequest: Codable, Hashable, Sendable {
    public var uploadRequestId: String
    public var deletions: [HealthDeletionUpload]

    public init(uploadRequestId: String, deletions: [HealthDeletionUpload]) {
        self.uploadRequestId = uploadRequestId
        self.deletions = deletions
    }

    enum CodingKeys: String, CodingKey {
        case deletions
        case uploadRequestId = "upload_request_id"
    }
}

/// What the server did with one sample or tombstone, in request order (`HealthUploadResult` in the spec).
public struct HealthUploadResult: Codable, Hashable, Sendable {
    public enum Status: String, Codable, Hashable, Sendable {
        /// Stored now.
        case applied
        /// The same uid was stored before, or the same reading (`dedup_key`) under another uid (a gateway that lost
        /// its database and read the device again); nothing was written.
        case duplicate
        /// Can never be stored as sent (`reason` says why); retrying cannot succeed.
        case rejected
    }

    public var uid: String
    public var status: Status
    public var reason: String?

    public init(uid: String, status: Status, reason: String? = nil) {
        self.uid = uid
        self.status = status
        self.reason = reason
    }
}

/// The answer to either upload: one result per item, in request order.
public struct HealthUploadResponse: Codable, Hashable, Sendable {
    public var results: [HealthUploadResult]

    public init(results: [HealthUploadResult]) { self.results = results }
}
