import TetherPrimitives

/// When, on a connection, a write `TimeWritePolicy.decide` ordered may be made, and what the gateway knows of the
/// clock after it (docs/design/health.md, "The time-write rule"). Pure: facts in, a verdict out.
///
/// Writing a clock changes the meaning of every stamp the device made before the write and has not sent yet, and
/// which side of the write a stamp is on cannot be told from the stamp (a clock that was ahead makes old stamps look
/// newer than the write). So:
/// 1. A clock that is not set: at once. Its old stamps say "not known" and are timed by receipt whatever the
///    facts (DeviceTimeDerivation rule 1).
/// 2. Otherwise, a device that keeps no stored records: at once (nothing stamped before the write is still to come,
///    beyond a live value in flight).
/// 3. Otherwise, a device whose every records-bearing service the cold lane reads over RACP: after each of those
///    services' procedures on this connection took every stored record (`RecordAccessOutcome.complete`), read
///    with the facts from before the write. A procedure that ends otherwise withholds the write on this connection:
///    the clock is untouched, so the next connection reads the same facts again and resumes under them.
/// 4. Otherwise (stored records the device sends on its own after the subscription, with no end to wait for: cuffs,
///    scales, thermometers; or stored records the cold lane does not read, PLX spot-checks): withheld.
/// At the write the facts change for the link, for the hot and cold lanes together (`DeviceClockFacts.afterWrite`).
public enum TimeWriteMoment: Hashable, Sendable {
    case atOnce
    case afterStoredRecordsTaken
    case withheld(Withheld)

    public enum Withheld: Hashable, Sendable {
        /// Rule 4.
        case storedRecordsWithoutEnd
        /// Rule 3: a procedure ended before it had taken every stored record.
        case storedRecordsNotAllTaken
    }

    /// What the device keeps that it stamped with its clock.
    public enum StoredRecords: Hashable, Sendable {
        case none
        /// Every records-bearing service is read by the cold lane over RACP.
        case readOverRecordAccess
        /// Some are sent on the device's own initiative, or not read back.
        case sentWithoutEnd
    }

    /// Rules 1–4 for a write `decide` ordered for this reason.
    public static func moment(for reason: TimeWritePolicy.Reason, storedRecords: StoredRecords) -> TimeWriteMoment {
        if case .clockNotSet = reason { return .atOnce }
        switch storedRecords {
        case .none: return .atOnce
        case .readOverRecordAccess: return .afterStoredRecordsTaken
        case .sentWithoutEnd: return .withheld(.storedRecordsWithoutEnd)
        }
    }
}

/// Rule 3's wait on one connection: the services whose procedure must end complete before the write.
public struct TimeWriteGate<Service: Hashable & Sendable>: Sendable {
    public enum Verdict: Hashable, Sendable {
        case wait
        /// The last awaited procedure took every stored record: write now (said once).
        case writeNow
        /// A procedure ended short: no write on this connection (said once).
        case withheld
        /// Already decided.
        case decided
    }

    private var awaiting: Set<Service>
    private var done = false

    public init(awaiting services: Set<Service>) {
        awaiting = services
    }

    /// A procedure of `service` ended; `tookEveryRecord` when it was `RecordAccessOutcome.complete`. Later
    /// procedures (catch-ups, backfills) change nothing once the verdict is given.
    public mutating func procedureEnded(_ service: Service, tookEveryRecord: Bool) -> Verdict {
        guard !done else { return .decided }
        guard tookEveryRecord else {
            done = true
            return .withheld
        }
        awaiting.remove(service)
        guard awaiting.isEmpty else { return .wait }
        done = true
        return .writeNow
    }
}

extension TimeWritePolicy.Reason {
    /// Why the gateway writes, for logs: a short phrase.
    public var phrase: String {
        switch self {
        case .clockNotSet(let evidence): "the clock is not set (\(evidence))"
        case .configuredAlways: "configured to write on every connection"
        case .skewExceeded(let skew): "the clock is off by \(skew)"
        case .notWritable: "no writable Current Time or Date Time"
        case .withinTolerance: "the clock is within the tolerance"
        case .notConfigured: "not configured to"
        case .gatewayTimeNotRepresentable: "the gateway's time cannot be written as a Date Time"
        }
    }
}

extension DeviceClockFacts {
    /// The skew `DerivedTime.skew` reports for this connection's reading of the clock (nil without one).
    public var measuredSkew: Duration? { DeviceTimeDerivation.measuredSkew(self) }

    /// Evidence in the reading itself that the clock is not set: a Date Time with year, month or day 0 ("not
    /// known", GATT Specification Supplement, Date Time).
    public var clockNotSetEvidence: TimeWritePolicy.ClockNotSetEvidence? {
        guard let reading, !reading.deviceTime.isKnown else { return nil }
        return .dateNotKnown
    }

    /// What the gateway knows of the clock once these writes are answered at `now`: set by the gateway in UTC, and
    /// read (the value written) at `now`, so that the skew is what the write left. Unchanged when no write carried
    /// a time (nothing was written).
    public func afterWrite(_ writes: [TimeWritePolicy.Write], at now: Timestamp) -> DeviceClockFacts {
        var reading: Reading?
        for write in writes {
            switch write.characteristic {
            case TimeWritePolicy.currentTimeUUID:
                if let value = try? CurrentTime.decode(write.bytes) {
                    reading = Reading(deviceTime: value.dateTime, fractions256: value.fractions256, receivedAt: now)
                }
            case TimeWritePolicy.dateTimeUUID:
                var reader = ByteReader(write.bytes)
                if let value = try? DeviceDateTime.decode(from: &reader) {
                    reading = Reading(deviceTime: value, receivedAt: now)
                }
            default:
                continue
            }
        }
        guard let reading else { return self }
        var facts = self
        facts.setting = .setByGatewayInUTC
        facts.reading = reading
        return facts
    }
}
