import Foundation
import GRDB
import TetherPrimitives

/// A change lane request (issue 14, "change"): a sample deleted or corrected. Each commits with its
/// `healthDeletion` row, the tombstone part 2 uploads; the sample row stays, marked deleted, so that its dedup key
/// keeps the device's copy of the reading from coming back.
public enum HealthChange: Hashable, Sendable {
    case deletedByTechnician(sampleUid: String, note: String?)
    /// The backend deleted the sample (its change feed, `Change.healthSampleDeleted`): the tombstone keeps the
    /// backend's time, and its uid when it names the sample by the same uid, so that it is the same tombstone on both
    /// sides and its upload is a `duplicate`; `nil` draws a fresh uid (the server holds the reading under another
    /// uid, and answers the upload `duplicate` by its dedup key).
    case deletedByBackend(sampleUid: String, tombstoneUid: String?, note: String?, requestedAt: Timestamp)
    /// The record is no longer in the device's memory although the gateway never asked for its deletion.
    case vanishedFromDevice(sampleUid: String)
    /// `replacement` takes the sample's place (stored on the change lane, keyed by the sample it replaces).
    case corrected(sampleUid: String, replacement: HealthSample, by: HealthChangeAuthor, note: String?)

    public var sampleUid: String {
        switch self {
        case .deletedByTechnician(let uid, _), .deletedByBackend(let uid, _, _, _), .vanishedFromDevice(let uid), .corrected(let uid, _, _, _): uid
        }
    }
}

/// What a committed change wrote.
public struct HealthChangeOutcome: Hashable, Sendable {
    /// The tombstone's uid (`healthDeletion.uid`).
    public var deletionUid: String
    /// The replacement sample's uid, for a correction.
    public var replacementUid: String?
}

extension HealthStore {
    func apply(_ change: HealthChange, in db: Database, context: inout WriteContext) throws -> HealthChangeOutcome {
        let uid = change.sampleUid
        guard let original = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT id, peripheralId, deletedAt FROM healthSample WHERE uid = ?"),
            arguments: [uid])
        else { throw HealthStoreError.unknownSample(uid: uid) }
        guard (original["deletedAt"] as Int64?) == nil else { throw HealthStoreError.sampleAlreadyDeleted(uid: uid) }
        let sampleId: Int64 = original["id"]

        let reason: HealthDeletionReason
        let requestedBy: String
        var note: String?
        var replacement: (id: Int64, uid: String)?
        var deletionUid: String?
        var requestedAt = context.now
        switch change {
        case .deletedByTechnician(_, let text):
            (reason, requestedBy, note) = (.technician, "technician", text)
        case .deletedByBackend(_, let tombstoneUid, let text, let at):
            (reason, requestedBy, note) = (.backend, "backend", text)
            (deletionUid, requestedAt) = (tombstoneUid, at)
        case .vanishedFromDevice:
            (reason, requestedBy) = (.vanishedFromDevice, "gateway")
        case .corrected(_, var sample, let author, let text):
            (reason, requestedBy, note) = (.correction, author.rawValue, text)
            sample.lane = .change
            let replacementUid = context.nextSampleUID()
            let peripheralId: Int64 = original["peripheralId"]
            // A plain INSERT: the correction key cannot exist while the original is undeleted, so a conflict is a bug.
            try db.execute(
                sql: Self.insertSampleSQL.replacingOccurrences(of: "ON CONFLICT (dedupKey) DO NOTHING", with: ""),
                arguments: Self.arguments(sample, uid: replacementUid, dedupKey: HealthDedupKey.correction(of: uid), peripheralId: peripheralId))
            replacement = (db.lastInsertedRowID, replacementUid)
            try faults.afterReplacementBeforeDeletion?()
        }
        let tombstoneUid = deletionUid ?? context.nextSampleUID()
        try faults.beforeDeletion?(change)
        // The trigger healthDeletionMarksSample sets the sample's deletedAt in this same statement.
        try db.execute(
            sql: """
                INSERT INTO healthDeletion (uid, sampleId, reason, requestedBy, replacementSampleId, note, requestedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [tombstoneUid, sampleId, reason.rawValue, requestedBy, replacement?.id, note, requestedAt.nanoseconds])
        return HealthChangeOutcome(deletionUid: tombstoneUid, replacementUid: replacement?.uid)
    }
}
