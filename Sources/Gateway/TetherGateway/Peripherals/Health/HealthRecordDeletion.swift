import HealthProfiles

/// How one deletion on a device went, or why none was made after a complete procedure (RecordTransfer rule 7), in
/// plain terms for tetherd's log (`GatewayTrace.healthRecordDeletion`).
public struct HealthRecordDeletion: Hashable, Sendable, CustomStringConvertible {
    public enum Outcome: String, Hashable, Sendable {
        /// The device deleted its records keyed up to `through` (or had none left there).
        case deleted
        /// The device refused (op code or operator not supported, an ATT error): not asked again on this link.
        case refused
        /// No answer, busy on every retry, or the link dropped: asked again after the next complete procedure.
        case interrupted
        /// Nothing to delete: nothing acknowledged yet, already deleted, a fenced epoch, facts unreadable.
        case declined
    }

    public var address: String
    /// `glucose`, `cgm` (`HealthService.controlName`).
    public var service: String
    public var outcome: Outcome
    /// The highest key deleted (deleted), or asked to be (refused, interrupted).
    public var through: UInt16?
    /// The epoch of the keys.
    public var epoch: UInt32
    /// Why, in words, unless deleted.
    public var reason: String?

    public init(address: String, service: String, outcome: Outcome, through: UInt16?, epoch: UInt32, reason: String?) {
        self.address = address
        self.service = service
        self.outcome = outcome
        self.through = through
        self.epoch = epoch
        self.reason = reason
    }

    init(address: String, service: HealthService, finished: RecordAccessOutcome, asked: RecordDeletionPermit?) {
        let (outcome, through, reason): (Outcome, UInt16?, String?)
        switch finished {
        case .deleted(let deletedThrough, _): (outcome, through, reason) = (.deleted, deletedThrough, nil)
        case .refused(let why, _): (outcome, through, reason) = (.refused, asked?.acknowledgedThrough, "\(why)")
        case .interrupted(let why, _): (outcome, through, reason) = (.interrupted, asked?.acknowledgedThrough, "\(why)")
        case .complete, .counted: (outcome, through, reason) = (.interrupted, asked?.acknowledgedThrough, "ended without an answer to the deletion")
        }
        self.init(
            address: address, service: service.controlName, outcome: outcome, through: through, epoch: finished.cursor.epoch,
            reason: reason)
    }

    init(address: String, service: HealthService, declined: RecordDeletionRule.Decline, epoch: UInt32) {
        self.init(address: address, service: service.controlName, outcome: .declined, through: nil, epoch: epoch, reason: "\(declined)")
    }

    public var description: String {
        let keys = through.map { " records ≤ \($0) of epoch \(epoch)" } ?? " (epoch \(epoch))"
        return "\(address) \(service): \(outcome.rawValue)\(keys)" + (reason.map { ": \($0)" } ?? "")
    }
}
