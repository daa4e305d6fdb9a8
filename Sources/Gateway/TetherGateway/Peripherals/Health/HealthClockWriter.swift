import BlueZ
import DBus
import HealthProfiles
import Synchronization
import TetherPrimitives

/// The time-write policy's I/O on one connection of a health device (docs/design/health.md, "The time-write rule"):
/// which clock characteristic the device lets the gateway write, and the writes themselves. The decisions are the
/// core's (`TimeWritePolicy.decide`: whether and what bytes; `TimeWriteMoment`: when); nothing here decides.
struct HealthClockWriter: Sendable {
    let link: PeripheralLink
    let mode: TimeWritePolicy.Mode
    let clock: GatewayClock

    /// The characteristic the gateway may write, as the device's GATT shows it: Current Time (0x2A2B) in a Current
    /// Time Service with the write property (CTS v1.1 §3.1: writing it is optional for the server), with Local Time
    /// Information (0x2A0F, CTS v1.1 §3.2) when that is writable too; otherwise a writable Date Time (0x2A08, GATT
    /// Specification Supplement, Date Time) in any service, which some devices expose instead of CTS.
    static func target(in services: [GattService]) -> TimeWritePolicy.Target {
        if let cts = services.first(where: { $0.assignedNumber == 0x1805 }),
            cts.characteristic("2A2B")?.flags.contains("write") == true
        {
            return .currentTime(alsoLocalTimeInformation: cts.characteristic("2A0F")?.flags.contains("write") == true)
        }
        let dateTime = services.contains { $0.characteristic("2A08")?.flags.contains("write") == true }
        return dateTime ? .dateTime : .notWritable
    }

    /// What the device keeps stamped with its clock (`TimeWriteMoment.StoredRecords`): records-bearing services and
    /// the stored measurements cuffs, thermometers and scales send after the subscription (BLS §4.4, HTS, WSS §4.4).
    /// `coldLane`: the services whose records the cold lane reads over RACP on this connection.
    static func storedRecords(offered: [HealthService], coldLane: Set<HealthService>) -> TimeWriteMoment.StoredRecords {
        let keeping = offered.filter { $0.storesRecords || $0.sendsStoredMeasurementsOnConnect }
        if keeping.isEmpty { return .none }
        return keeping.allSatisfy(coldLane.contains) ? .readOverRecordAccess : .sentWithoutEnd
    }

    /// The decision for this connection, from what was read of the clock, or from `evidence` a measurement gave
    /// that the clock is not set (`DecodedHealthValue.clockNotSetEvidence`).
    func decide(_ facts: DeviceClockFacts, evidence: TimeWritePolicy.ClockNotSetEvidence? = nil) -> TimeWritePolicy.Decision {
        TimeWritePolicy.decide(TimeWritePolicy.Facts(
            mode: mode, target: Self.target(in: link.services), clockNotSet: evidence ?? facts.clockNotSetEvidence,
            measuredSkew: facts.measuredSkew, now: clock.linkNow()))
    }

    /// Decides again with the gateway's time now (the bytes carry it) and writes; returns the facts after the write,
    /// or nil when nothing was written (the decision changed, or the device refused: the facts stay as read).
    func write(over facts: DeviceClockFacts, evidence: TimeWritePolicy.ClockNotSetEvidence? = nil) async -> DeviceClockFacts? {
        let now = clock.linkNow()
        let decision = TimeWritePolicy.decide(TimeWritePolicy.Facts(
            mode: mode, target: Self.target(in: link.services), clockNotSet: evidence ?? facts.clockNotSetEvidence,
            measuredSkew: facts.measuredSkew, now: now))
        guard case .write(let writes, _) = decision else { return nil }
        var written: [TimeWritePolicy.Write] = []
        for write in writes {
            guard let path = Self.path(of: write.characteristic, in: link.services) else { continue }
            do {
                try await GattCharacteristic(session: link.session, path: path).writeValue(write.bytes, type: .request, timeout: link.timeout)
                written.append(write)
            } catch {
                // Current Time refused (CTS v1.1's application error 0x80, Data field ignored) or the link went: the clock is
                // as it was read, and so are the facts. A Local Time Information refused after a Current Time
                // written still leaves the clock set in UTC.
                if written.isEmpty { return nil }
            }
        }
        let after = facts.afterWrite(written, at: now)
        return after == facts ? nil : after
    }

    private static func path(of characteristic: UInt16, in services: [GattService]) -> DBusObjectPath? {
        let uuid = String(characteristic, radix: 16, uppercase: true)
        for service in services {
            if let found = service.characteristic(uuid), found.flags.contains("write") { return found.path }
        }
        return nil
    }
}

extension HealthService {
    /// Cuffs, thermometers and scales keep measurements taken while disconnected and send them on their own once
    /// the measurement is subscribed (BLS v1.1.1 §4.4, HTS v1.0 §4.3, WSS v1.0 §4.4): no procedure ends them.
    var sendsStoredMeasurementsOnConnect: Bool {
        switch self {
        case .bloodPressure, .healthThermometer, .weightScale, .bodyComposition: true
        case .heartRate, .glucose, .pulseOximeter, .continuousGlucoseMonitoring: false
        }
    }
}

/// `TimeWriteMoment` rule 3 on one connection: the cold lane's drivers report each procedure's end here, and the
/// write runs once when every awaited service's procedure took every stored record (`TimeWriteGate`). Armed before
/// the drivers start; unarmed, it does nothing.
final class HealthLateClockWrite: Sendable {
    private let state = Mutex<(gate: TimeWriteGate<HealthService>, write: @Sendable () -> Void)?>(nil)

    func arm(awaiting services: Set<HealthService>, write: @escaping @Sendable () -> Void) {
        state.withLock { $0 = (TimeWriteGate(awaiting: services), write) }
    }

    func procedureEnded(_ service: HealthService, _ ending: RecordProcedureEnding) {
        let tookEveryRecord = if case .finished(.complete) = ending { true } else { false }
        let write: (@Sendable () -> Void)? = state.withLock { armed in
            guard armed != nil, armed?.gate.procedureEnded(service, tookEveryRecord: tookEveryRecord) == .writeNow else { return nil }
            return armed?.write
        }
        write?()
    }
}

/// `TimeWriteMoment` rule 1 on one connection, from the values: the first measurement that says the clock is not
/// set (`DecodedHealthValue.clockNotSetEvidence`: PLX "device clock is not set", a time stamp with a date not
/// known, CGM "time synchronization required") starts a write, once per connection; a clock the gateway already
/// wrote on this connection is not written again. The clock read at the connection may have shown nothing wrong
/// (no Current Time Service, or a device that keeps its measurement clock apart), so this is the only way such a
/// device hears the gateway's time.
///
/// It watches from the connection's first value, before the rest of the set-up is done: evidence seen before the
/// write is armed waits for it.
final class HealthClockNotSetWrite: Sendable {
    typealias Write = @Sendable (TimeWritePolicy.ClockNotSetEvidence) -> Void

    private enum State {
        /// Looking at values; the evidence seen before `arm`, if any.
        case watching(TimeWritePolicy.ClockNotSetEvidence?)
        case armed(Write)
        /// Asked to write, or not wanted on this connection: values are no longer decoded for it.
        case done
    }

    private let state: Mutex<State>

    /// `watching` false: the clock was written on this connection already, so no value asks again.
    init(watching: Bool) {
        state = Mutex(watching ? .watching(nil) : .done)
    }

    /// The write to start at the first evidence (at once, when it was seen already).
    func arm(write: @escaping Write) {
        let seen: TimeWritePolicy.ClockNotSetEvidence? = state.withLock { current in
            switch current {
            case .watching(let evidence?):
                current = .done
                return evidence
            case .watching(nil):
                current = .armed(write)
                return nil
            case .armed, .done:
                return nil
            }
        }
        if let seen { write(seen) }
    }

    /// A value arrived on this connection; decodes it (`HealthDecoder`, as the lanes do) for the evidence alone.
    func received(characteristic: UInt16, bytes: [UInt8]) {
        let looking = state.withLock { current in
            switch current {
            case .watching(nil), .armed: true
            case .watching, .done: false
            }
        }
        guard looking, let known = HealthCharacteristic(rawValue: characteristic),
            let evidence = (try? HealthDecoder.decode(characteristic: known, bytes: bytes))?.clockNotSetEvidence
        else { return }
        let write: Write? = state.withLock { current in
            switch current {
            case .watching(nil):
                current = .watching(evidence)
                return nil
            case .armed(let write):
                current = .done
                return write
            case .watching, .done:
                return nil
            }
        }
        write?(evidence)
    }
}
