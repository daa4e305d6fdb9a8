import Foundation
import SyncContract

/// The backend's own deletion of a health sample (issue 14, the change lane: "a technician's or the backend's
/// deletion"): an operator deletes a sample the tenant holds (`tether-server health delete`). The server stores the
/// tombstone as if a gateway had uploaded it (reason and requester `backend`), marks the sample deleted, and appends
/// `Change.healthSampleDeleted` to the tenant's change feed in the same transaction, so that every gateway of the
/// tenant pulls it; the gateway that holds the reading deletes its copy (TetherSync's `ChangeApplier`).
public enum HealthSampleDeletion: Hashable, Sendable {
    /// Deleted now: the tombstone, with the sample's `dedup_key`, as the feed carries it.
    case deleted(HealthDeletionUpload)
    /// A tombstone deleted the sample before (a technician's on a gateway, or an operator's); nothing was written.
    case alreadyDeleted(at: Int64)
    /// The tenant holds no sample with this uid.
    case unknownSample
    /// The tombstone breaks a rule of `HealthUploadValidation` (a note over 1,000 characters, say).
    case rejected(String)

    /// The `gateway` column of an operator's tombstone: no gateway uploaded it, and no token names a gateway "".
    static let operatorGateway = ""

    /// The feed entry of a deletion: origin none, so every gateway of the tenant pulls it.
    var feedEntry: FeedEntry? {
        guard case .deleted(let tombstone) = self else { return nil }
        return FeedEntry(origin: nil, change: .healthSampleDeleted(tombstone))
    }
}
