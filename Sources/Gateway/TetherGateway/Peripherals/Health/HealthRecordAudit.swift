import HealthProfiles

/// How one look for vanished records on a device went (RecordTransfer rule 8; tetherd's
/// `[health] audit_vanished_records`), in plain terms for tetherd's log (`GatewayTrace.healthRecordAudit`).
public struct HealthRecordAudit: Hashable, Sendable, CustomStringConvertible {
    public enum Outcome: String, Hashable, Sendable {
        /// Every record the gateway took is still on the device, or went from the bottom (a full memory, the
        /// gateway's own deletion).
        case intact
        /// Records vanished from the middle of the device's memory: their samples were tombstoned.
        case vanished
        /// Records gone from the device with no sample left to delete: deleted already (a technician's deletion
        /// came first), or none stored (a number the transfer passed as absent). Nothing written.
        case nothingToDelete = "nothing-to-delete"
        /// No finding: the device cannot count within a range, the counts contradict the transfer, too many counts,
        /// the link dropped, the store failed. Nothing is tombstoned on a guess.
        case inconclusive
        /// Nothing to look at: nothing committed, a fenced epoch, a stream keyed by time offsets.
        case skipped
    }

    public var address: String
    /// `glucose`, `cgm` (`HealthService.controlName`).
    public var service: String
    public var outcome: Outcome
    public var epoch: UInt32
    /// The vanished records' keys.
    public var keys: [UInt16]
    /// Samples tombstoned (`vanished-from-device`) for them.
    public var tombstones: Int
    /// Why, in words, when inconclusive or skipped.
    public var reason: String?

    public init(address: String, service: String, outcome: Outcome, epoch: UInt32, keys: [UInt16] = [], tombstones: Int = 0, reason: String? = nil) {
        self.address = address
        self.service = service
        self.outcome = outcome
        self.epoch = epoch
        self.keys = keys
        self.tombstones = tombstones
        self.reason = reason
    }

    public var description: String {
        var text = "\(address) \(service): \(outcome.rawValue) (epoch \(epoch))"
        if !keys.isEmpty { text += ": records \(keys.map(String.init).joined(separator: ", ")); \(tombstones) samples tombstoned" }
        return text + (reason.map { ": \($0)" } ?? "")
    }
}
