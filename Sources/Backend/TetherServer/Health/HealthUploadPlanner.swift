import Foundation
import SyncContract

/// What a health upload decides, without I/O: the store loads the rows a request could touch (`HealthUploadState`),
/// the planner answers each item in request order and collects the writes, and the store writes them in the same
/// transaction. Later items see earlier ones (a uid twice in one request is applied once, then a duplicate).
///
/// The rules (docs/specs/sync-api.yaml, "Health"), every one within the principal's tenant:
/// 1. An item that breaks a rule of `HealthUploadValidation` is `rejected` with the reason.
/// 2. A sample uid already stored: `duplicate` when the reading is identical, else `rejected` (a uid is an
///    idempotency key, never reused for another reading). What the device said about itself (manufacturer, model,
///    serial, address) is not the reading: a gateway may learn it from Device Information between an upload whose
///    answer was lost and its retry, and that retry is the same sample. The stored copy keeps what came first.
/// 3. A sample whose `dedup_key` is stored under another uid: `duplicate`, nothing written (the same reading, read
///    again by a gateway that lost its database).
/// 4. A new sample is stored; deleted at once when a tombstone for its uid came first (uploads need no order).
/// 5. A tombstone uid already stored: `duplicate` when identical, else `rejected`.
/// 6. A tombstone for a sample another tombstone already deleted: `duplicate`, nothing written.
/// 7. A new tombstone is stored, known sample or not; a stored sample is marked deleted at its `requested_at`. The
///    sample is the one stored under `sample_uid`, else, when the tombstone names a `sample_dedup_key`, the one
///    stored under that key (rule 3's copy: the same reading, first uploaded under another uid); already deleted,
///    the tombstone is `duplicate`, nothing written.
///
/// UUIDs are compared and stored in lowercase (RFC 9562 §4: they are case-insensitive on input); a result echoes
/// the uid as it was sent.
struct HealthUploadPlanner {
    private(set) var state: HealthUploadState
    private(set) var writes = HealthUploadWrites()
    let gateway: String
    let storedAt: Int64

    init(state: HealthUploadState, gateway: String, storedAt: Int64) {
        self.state = state
        self.gateway = gateway
        self.storedAt = storedAt
    }

    mutating func apply(_ sent: HealthSampleUpload) -> HealthUploadResult {
        if let problem = HealthUploadValidation.problem(in: sent) { return HealthUploadResult(uid: sent.uid, status: .rejected, reason: problem) }
        let sample = sent.normalized
        if let stored = state.samples[sample.uid] {
            guard Self.sameReading(stored.sample, sample) else {
                return HealthUploadResult(uid: sent.uid, status: .rejected, reason: "uid reused for different content: uid \(sample.uid) is stored with other values")
            }
            return HealthUploadResult(uid: sent.uid, status: .duplicate)
        }
        if let holder = state.dedupKeys[sample.dedupKey] {
            return HealthUploadResult(uid: sent.uid, status: .duplicate, reason: "the same reading (dedup_key) is stored as sample \(holder)")
        }
        let row = HealthSampleRow(sample: sample, deletedAt: state.deletionsBySample[sample.uid]?.deletion.requestedAt, gateway: gateway, storedAt: storedAt)
        state.samples[sample.uid] = row
        state.dedupKeys[sample.dedupKey] = sample.uid
        writes.samples.append(row)
        return HealthUploadResult(uid: sent.uid, status: .applied)
    }

    /// Rule 2's comparison: every field but the device's self-description (its uid, the device's identity, counts).
    static func sameReading(_ a: HealthSampleUpload, _ b: HealthSampleUpload) -> Bool {
        var a = a, b = b
        a.device = HealthDeviceReference(uid: a.device.uid)
        b.device = HealthDeviceReference(uid: b.device.uid)
        return a == b
    }

    mutating func apply(_ sent: HealthDeletionUpload) -> HealthUploadResult {
        if let problem = HealthUploadValidation.problem(in: sent) { return HealthUploadResult(uid: sent.uid, status: .rejected, reason: problem) }
        let deletion = sent.normalized
        if let stored = state.deletions[deletion.uid] {
            guard stored.deletion.identity == deletion.identity else {
                return HealthUploadResult(uid: sent.uid, status: .rejected, reason: "uid reused for different content: tombstone \(deletion.uid) is stored with other values")
            }
            return HealthUploadResult(uid: sent.uid, status: .duplicate)
        }
        if let earlier = state.deletionsBySample[deletion.sampleUid] {
            return HealthUploadResult(uid: sent.uid, status: .duplicate, reason: "sample \(deletion.sampleUid) is already deleted by tombstone \(earlier.deletion.uid)")
        }
        // Rule 7: the sample by its uid, or the same reading stored under another uid.
        var target = deletion.sampleUid
        if state.samples[target] == nil, let key = deletion.sampleDedupKey, let holder = state.dedupKeys[key] {
            if state.samples[holder]?.deletedAt != nil {
                return HealthUploadResult(uid: sent.uid, status: .duplicate, reason: "the same reading (sample_dedup_key) is stored as sample \(holder), already deleted")
            }
            target = holder
        }
        let row = HealthDeletionRow(deletion: deletion, gateway: gateway, storedAt: storedAt)
        state.deletions[deletion.uid] = row
        state.deletionsBySample[deletion.sampleUid] = row
        writes.deletions.append(row)
        if var sample = state.samples[target], sample.deletedAt == nil {
            sample.deletedAt = deletion.requestedAt
            state.samples[target] = sample
            writes.deletedSamples.append(HealthUploadWrites.Deleted(uid: target, deletedAt: deletion.requestedAt))
        }
        return HealthUploadResult(uid: sent.uid, status: .applied)
    }
}

extension HealthUploadPlanner {
    /// Plans the operator's deletion of the sample stored under `tombstone.sampleUid`; the caller's tombstone has
    /// reason and requester `backend` and no replacement. Writes nothing unless the answer is `.deleted`.
    mutating func deleteByOperator(_ tombstone: HealthDeletionUpload) -> HealthSampleDeletion {
        if let problem = HealthUploadValidation.problem(in: tombstone) { return .rejected(problem) }
        let deletion = tombstone.normalized
        guard deletion.reason == "backend", deletion.requestedBy == "backend", deletion.replacementSampleUid == nil else {
            return .rejected("an operator's deletion has reason and requested_by backend and no replacement")
        }
        guard var sample = state.samples[deletion.sampleUid] else { return .unknownSample }
        // A sample can be deleted by a tombstone that names it by another uid (rule 7's dedup-key copy).
        if let deletedAt = sample.deletedAt ?? state.deletionsBySample[deletion.sampleUid]?.deletion.requestedAt {
            return .alreadyDeleted(at: deletedAt)
        }
        var stored = deletion
        stored.sampleDedupKey = nil  // a lookup, not part of the tombstone (rule 5)
        let row = HealthDeletionRow(deletion: stored, gateway: gateway, storedAt: storedAt)
        state.add(row)
        writes.deletions.append(row)
        sample.deletedAt = deletion.requestedAt
        state.samples[deletion.sampleUid] = sample
        writes.deletedSamples.append(HealthUploadWrites.Deleted(uid: deletion.sampleUid, deletedAt: deletion.requestedAt))
        var carried = stored
        carried.sampleDedupKey = sample.sample.dedupKey
        return .deleted(carried)
    }
}

/// The stored rows a request could touch, keyed by lowercase uid.
struct HealthUploadState: Sendable {
    var samples: [String: HealthSampleRow] = [:]
    /// dedup_key → the uid of the sample stored under it.
    var dedupKeys: [String: String] = [:]
    var deletions: [String: HealthDeletionRow] = [:]
    /// sample uid → its tombstone.
    var deletionsBySample: [String: HealthDeletionRow] = [:]

    mutating func add(_ row: HealthSampleRow) {
        samples[row.sample.uid] = row
        dedupKeys[row.sample.dedupKey] = row.sample.uid
    }

    mutating func add(_ row: HealthDeletionRow) {
        deletions[row.deletion.uid] = row
        deletionsBySample[row.deletion.sampleUid] = row
    }
}

/// What one request writes: new rows, and stored samples that a new tombstone deletes.
struct HealthUploadWrites: Sendable {
    struct Deleted: Sendable {
        var uid: String
        var deletedAt: Int64
    }

    var samples: [HealthSampleRow] = []
    var deletions: [HealthDeletionRow] = []
    var deletedSamples: [Deleted] = []
}

/// The rows a request could touch: of the items that pass validation, by lowercase uid.
struct HealthUploadKeys: Sendable {
    /// Samples to load by uid (a samples request's uids; a deletions request's sample uids).
    var sampleUIDs: [String] = []
    var dedupKeys: [String] = []
    /// Tombstones to load by uid.
    var deletionUIDs: [String] = []
    /// Tombstones to load by the sample they delete.
    var deletedSampleUIDs: [String] = []

    init(samples: [HealthSampleUpload]) {
        let valid = samples.filter { HealthUploadValidation.problem(in: $0) == nil }.map(\.normalized)
        sampleUIDs = Array(Set(valid.map(\.uid)))
        dedupKeys = Array(Set(valid.map(\.dedupKey)))
        deletedSampleUIDs = sampleUIDs
    }

    init(deletions: [HealthDeletionUpload]) {
        let valid = deletions.filter { HealthUploadValidation.problem(in: $0) == nil }.map(\.normalized)
        deletionUIDs = Array(Set(valid.map(\.uid)))
        sampleUIDs = Array(Set(valid.map(\.sampleUid)))
        dedupKeys = Array(Set(valid.compactMap(\.sampleDedupKey)))
        deletedSampleUIDs = sampleUIDs
    }
}

extension HealthSampleUpload {
    /// UUIDs in lowercase: the form compared and stored.
    var normalized: HealthSampleUpload {
        var sample = self
        sample.uid = uid.lowercased()
        sample.replaces = replaces?.lowercased()
        return sample
    }
}

extension HealthDeletionUpload {
    var normalized: HealthDeletionUpload {
        var deletion = self
        deletion.uid = uid.lowercased()
        deletion.sampleUid = sampleUid.lowercased()
        deletion.replacementSampleUid = replacementSampleUid?.lowercased()
        return deletion
    }

    /// Rule 5's comparison: the tombstone without `sample_dedup_key`, which only finds the sample and is not stored.
    var identity: HealthDeletionUpload {
        var deletion = self
        deletion.sampleDedupKey = nil
        return deletion
    }
}
