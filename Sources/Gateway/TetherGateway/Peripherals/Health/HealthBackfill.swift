import HealthProfiles

/// The answer to a technician's backfill (control API `Backfill`, `tether health backfill`): how the cold-lane
/// procedure it ran (or joined, when one was already running) ended, and how many records it stored. Plain terms,
/// so the daemon needs no `HealthProfiles` types to show it.
public struct HealthBackfillResult: Hashable, Sendable {
    /// The health service whose records were read (`glucose`, `pulse-oximeter`, `cgm`).
    public var service: String
    /// `complete`, `interrupted`, `refused`, `abandoned` (a store failed: nothing more on this link) or `link-down`
    /// (the link ended before the procedure did). `deleted` is mapped for completeness only: a deletion of
    /// acknowledged records ends apart from transfers (RecordTransfer rule 7) and never answers a backfill.
    public var outcome: String
    /// Why it was not complete, in words (`disconnected`, `serverBusy`, …); nil when complete.
    public var reason: String?
    /// Records stored (with their cursor move) between the request and the procedure's end.
    public var recordsStored: Int
    /// The committed cursor afterwards: its epoch and the highest key in it (nil before the first record).
    public var cursorEpoch: UInt32
    public var cursorLast: UInt16?

    public init(service: String, outcome: String, reason: String?, recordsStored: Int, cursorEpoch: UInt32, cursorLast: UInt16?) {
        self.service = service
        self.outcome = outcome
        self.reason = reason
        self.recordsStored = recordsStored
        self.cursorEpoch = cursorEpoch
        self.cursorLast = cursorLast
    }

    init(service: HealthService, outcome: RecordAccessOutcome, recordsStored: Int) {
        let (name, reason): (String, String?)
        switch outcome {
        case .complete: (name, reason) = ("complete", nil)
        case .interrupted(let why, _): (name, reason) = ("interrupted", "\(why)")
        case .refused(let why, _): (name, reason) = ("refused", "\(why)")
        case .deleted(let through, _): (name, reason) = ("deleted", "records through \(through) deleted from the device")
        case .counted(let range, let count, _): (name, reason) = ("counted", "\(count) records within \(range)")
        }
        self.init(
            service: service.controlName, outcome: name, reason: reason, recordsStored: recordsStored,
            cursorEpoch: outcome.cursor.epoch, cursorLast: outcome.cursor.last)
    }
}

extension HealthService {
    /// The name the control API and the CLI show for the service (docs/specs/control-api.md, "Health device").
    public var controlName: String {
        switch self {
        case .heartRate: "heart-rate"
        case .bloodPressure: "blood-pressure"
        case .healthThermometer: "thermometer"
        case .weightScale: "weight-scale"
        case .bodyComposition: "body-composition"
        case .glucose: "glucose"
        case .pulseOximeter: "pulse-oximeter"
        case .continuousGlucoseMonitoring: "cgm"
        }
    }
}
