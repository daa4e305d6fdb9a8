import HealthProfiles
import Testing
import TetherPrimitives

/// `TimeWriteMoment` rules 1–4, the gate of rule 3, `Mode.never`, and the facts after a write
/// (docs/design/health.md, "The time-write rule").
@Suite struct TimeWriteMomentTests {
    let now = Timestamp(nanoseconds: 1_717_675_484 * 1_000_000_000 + 500_000_000)  // 2024-06-06T12:04:44.5Z

    @Test func aClockNotSetIsWrittenAtOnceWhateverTheDeviceStores() {
        for stored: TimeWriteMoment.StoredRecords in [.none, .readOverRecordAccess, .sentWithoutEnd] {
            #expect(TimeWriteMoment.moment(for: .clockNotSet(.dateNotKnown), storedRecords: stored) == .atOnce)
        }
    }

    @Test func aSetClockWaitsForTheColdLaneOrIsWithheld() {
        for reason: TimeWritePolicy.Reason in [.configuredAlways, .skewExceeded(.seconds(3_600))] {
            #expect(TimeWriteMoment.moment(for: reason, storedRecords: .none) == .atOnce)
            #expect(TimeWriteMoment.moment(for: reason, storedRecords: .readOverRecordAccess) == .afterStoredRecordsTaken)
            #expect(TimeWriteMoment.moment(for: reason, storedRecords: .sentWithoutEnd) == .withheld(.storedRecordsWithoutEnd))
        }
    }

    @Test func theGateOpensOnceEveryServiceTookEveryRecord() {
        var gate = TimeWriteGate(awaiting: ["glucose", "cgm"])
        #expect(gate.procedureEnded("glucose", tookEveryRecord: true) == .wait)
        // A second procedure of the same service (a catch-up) does not count for the other.
        #expect(gate.procedureEnded("glucose", tookEveryRecord: true) == .wait)
        #expect(gate.procedureEnded("cgm", tookEveryRecord: true) == .writeNow)
        #expect(gate.procedureEnded("cgm", tookEveryRecord: true) == .decided)
    }

    @Test func aProcedureEndingShortWithholdsTheWriteForTheConnection() {
        var gate = TimeWriteGate(awaiting: ["glucose"])
        #expect(gate.procedureEnded("glucose", tookEveryRecord: false) == .withheld)
        // A later complete procedure (a backfill) on the same connection does not write either: the clock stays
        // untouched, and the next connection reads it again and tries again.
        #expect(gate.procedureEnded("glucose", tookEveryRecord: true) == .decided)
    }

    @Test func neverWritesEvenAClockNotSet() {
        let decision = TimeWritePolicy.decide(.init(
            mode: .never, target: .currentTime(alsoLocalTimeInformation: true), clockNotSet: .dateNotKnown, now: now))
        #expect(decision == .keep(reason: .notConfigured))
    }

    /// A Current Time read as all zeros ("not known", GATT Specification Supplement, Date Time) is the evidence.
    @Test func aDateNotKnownIsEvidenceOfAClockNotSet() {
        let unknown = DeviceDateTime(year: 0, month: 0, day: 0, hours: 0, minutes: 0, seconds: 0)
        let facts = DeviceClockFacts(reading: .init(deviceTime: unknown, receivedAt: now))
        #expect(facts.clockNotSetEvidence == .dateNotKnown)
        #expect(facts.measuredSkew == nil)
        let set = DeviceClockFacts(reading: .init(deviceTime: DeviceDateTime(secondsSinceEpoch: 1_717_675_484), receivedAt: now))
        #expect(set.clockNotSetEvidence == nil)
        #expect(set.measuredSkew == .milliseconds(-500))
    }

    /// After the write the clock reads the bytes written (CTS v1.1 §3.1: 2024-06-06 12:04:44, Thursday, 128/256 s,
    /// manual update) at the instant of the write, set by the gateway in UTC: a stamp is then its UTC.
    @Test func theFactsAfterAWriteReadTheStampAsUTC() {
        let before = DeviceClockFacts(
            setting: .localTime(LocalTimeInformation(timeZoneQuarterHours: 4, dstOffset: .daylightTime)),
            reading: .init(deviceTime: DeviceDateTime(secondsSinceEpoch: 1_717_675_484 + 3_600), receivedAt: now))
        let written: [UInt8] = [0xE8, 0x07, 0x06, 0x06, 0x0C, 0x04, 0x2C, 0x04, 0x80, 0x01]
        let after = before.afterWrite([.init(characteristic: 0x2A2B, bytes: written)], at: now)
        #expect(after.setting == .setByGatewayInUTC)
        #expect(after.reading?.deviceTime == DeviceDateTime(year: 2024, month: 6, day: 6, hours: 12, minutes: 4, seconds: 44))
        #expect(after.measuredSkew == .zero)
        let stamp = DeviceDateTime(year: 2024, month: 6, day: 6, hours: 13, minutes: 0, seconds: 0)
        let derived = DeviceTimeDerivation.derive(.dateTime(stamp), receivedAt: now, clock: after)
        #expect(derived.basis == .clockSetByGateway && derived.utc == Timestamp(nanoseconds: 1_717_678_800 * 1_000_000_000))
        // A write that carried no time (only Local Time Information) changes nothing.
        #expect(before.afterWrite([.init(characteristic: 0x2A0F, bytes: [0, 0])], at: now) == before)
    }
}
