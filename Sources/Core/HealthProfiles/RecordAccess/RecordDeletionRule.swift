/// Which of a device's stored records the gateway may delete from it (issue 14, item 2: only under an explicit
/// per-device policy, and only records the backend has acknowledged): a pure rule over facts the store reads.
/// Everything that decides how far a deletion may go lives in this file; `RecordAccessClient` rule 8 checks the
/// permit once more against its own cursor before it writes "Delete Stored Records" (GSS §3.178.2, op code 0x02,
/// operator 0x02 "less than or equal to", filter type 0x01).
///
/// Rules:
/// 1. Only the cursor's epoch, only with something committed in it, never in a fenced epoch: there the device may
///    still hold an earlier epoch's records keyed above its latest, and a key filter cannot tell them apart. Facts
///    read for another epoch grant nothing.
/// 2. Never beyond the committed cursor: a key above it may be a record the gateway has not stored yet.
/// 3. Walking the epoch's stored keys upwards from the lowest, the permit ends at the last key whose samples the
///    backend has all acknowledged (`uploaded`: it answered applied or duplicate) before the first key that has
///    one it has not (pending, leased, failed, rejected). Keys with no sample below the cursor are keys the cursor
///    passed (RecordAccessClient rule 3: the device did not have them); they neither stop nor extend the walk.
///    The permit names an acknowledged record's key.
/// 4. Nothing acknowledged: no permit. A permit at or below what was already deleted in this epoch: none either
///    (a later connection does not delete again).
public enum RecordDeletionRule {
    /// Why no permit was granted (for a debug line; none of these is an error).
    public enum Decline: Hashable, Sendable {
        case nothingCommitted
        case fencedEpoch
        case factsOfAnotherEpoch(facts: UInt32, cursor: UInt32)
        /// The lowest stored key of the epoch is not acknowledged yet (or there is none).
        case nothingAcknowledged(firstUnacknowledged: UInt16?)
        case alreadyDeleted(through: UInt16)
        /// The store could not read the facts (RecordTransfer rule 7): nothing is deleted on a guess.
        case acknowledgementsUnreadable
        /// The client refused the permit (RecordAccessClient rule 8); not expected after rules 1 and 2.
        case refusedByClient(RecordDeletionRefusal)
    }

    public enum Decision: Hashable, Sendable {
        case permit(RecordDeletionPermit)
        case declined(Decline)
    }

    /// Rules 1–4 for the cursor the cold lane holds now (the client's: a fence lifted on this connection is gone).
    public static func decide(_ facts: RecordAcknowledgements, cursor: RecordCursor) -> Decision {
        guard let last = cursor.last else { return .declined(.nothingCommitted) }
        guard cursor.fence == nil else { return .declined(.fencedEpoch) }
        guard facts.epoch == cursor.epoch else { return .declined(.factsOfAnotherEpoch(facts: facts.epoch, cursor: cursor.epoch)) }
        var through: UInt16?
        var firstUnacknowledged: UInt16?
        for key in facts.keys.keys.sorted() where key <= last {
            guard facts.keys[key] == true else {
                firstUnacknowledged = key
                break
            }
            through = key
        }
        guard let through else { return .declined(.nothingAcknowledged(firstUnacknowledged: firstUnacknowledged)) }
        if let deleted = facts.deletedThrough, deleted >= through { return .declined(.alreadyDeleted(through: deleted)) }
        return .permit(RecordDeletionPermit(epoch: cursor.epoch, acknowledgedThrough: through))
    }
}

/// What the store holds of one epoch of a device's record stream, for `RecordDeletionRule`: every key the gateway
/// stored a sample under (the record's and its companions', deleted samples included), each with whether the
/// backend acknowledged all of them; and the highest key the gateway already deleted from the device in this epoch.
public struct RecordAcknowledgements: Hashable, Sendable {
    public var epoch: UInt32
    /// Key → every sample under it is acknowledged (`uploaded`).
    public var keys: [UInt16: Bool]
    public var deletedThrough: UInt16?

    public init(epoch: UInt32, keys: [UInt16: Bool], deletedThrough: UInt16? = nil) {
        self.epoch = epoch
        self.keys = keys
        self.deletedThrough = deletedThrough
    }
}
