import Testing
import TetherPrimitives
@testable import HealthProfiles

/// The effective UTC of a reading, its basis and the skew, against known instants:
///   date -u -d 2024-07-15T08:00:00Z +%s                 = 1721030400
///   TZ=America/New_York date -d '2024-07-15 08:00' +%s = 1721044800  (EDT, UTC−4)
///   TZ=Asia/Kolkata date -d '2024-07-15 08:00' +%s     = 1721010600  (IST, UTC+5:30)
///   TZ=Europe/Berlin date -d '2024-07-15 08:00' +%s    = 1721023200  (CEST, UTC+2)
///   TZ=Australia/Adelaide date -d '2024-01-15 08:00' +%s = 1705267800 (ACDT, UTC+10:30)
@Suite struct DeviceTimeDerivationTests {
    func seconds(_ value: Int64) -> Timestamp { Timestamp(nanoseconds: value * 1_000_000_000) }
    let july15At8 = DeviceDateTime(year: 2024, month: 7, day: 15, hours: 8, minutes: 0, seconds: 0)
    let receipt = Timestamp(nanoseconds: 1_721_050_000 * 1_000_000_000)

    @Test func aClockTheGatewaySetInUTCIsReadAsUTC() {
        let derived = DeviceTimeDerivation.derive(.dateTime(july15At8), receivedAt: receipt, clock: DeviceClockFacts(setting: .setByGatewayInUTC))
        #expect(derived.utc == seconds(1_721_030_400))
        #expect(derived.basis == .clockSetByGateway)
        #expect(derived.skew == nil)
        #expect(derived.raw == .dateTime(july15At8))
    }

    @Test(arguments: [
        (Int8(-20), LocalTimeInformation.DSTOffset.daylightTime, Int64(1_721_044_800)),  // New York, summer
        (Int8(22), .standardTime, 1_721_010_600),  // Kolkata
        (Int8(4), .daylightTime, 1_721_023_200),  // Berlin, summer
    ])
    func localTimeWithAKnownOffset(zone: Int8, dst: LocalTimeInformation.DSTOffset, expected: Int64) {
        let clock = DeviceClockFacts(setting: .localTime(LocalTimeInformation(timeZoneQuarterHours: zone, dstOffset: dst)))
        let derived = DeviceTimeDerivation.derive(.dateTime(july15At8), receivedAt: receipt, clock: clock)
        #expect(derived.utc == seconds(expected))
        #expect(derived.basis == .localTimeWithOffset)
    }

    @Test func adelaideInSummerIsTenAndAHalfHoursAhead() {
        let clock = DeviceClockFacts(setting: .localTime(LocalTimeInformation(timeZoneQuarterHours: 38, dstOffset: .daylightTime)))
        let local = DeviceDateTime(year: 2024, month: 1, day: 15, hours: 8, minutes: 0, seconds: 0)
        #expect(DeviceTimeDerivation.derive(.dateTime(local), receivedAt: receipt, clock: clock).utc == seconds(1_705_267_800))
    }

    /// An unknown zone (−128) or DST (255) leaves the offset unknown; with a reading of the clock the coincident
    /// offset is used, otherwise the time is read as UTC and marked unverified.
    @Test func anUnknownZoneFallsBackToTheClockReadingOrIsMarkedUnverified() {
        let unknownZone = DeviceClockFacts(setting: .localTime(LocalTimeInformation(timeZoneQuarterHours: nil, dstOffset: .standardTime)))
        let unverified = DeviceTimeDerivation.derive(.dateTime(july15At8), receivedAt: receipt, clock: unknownZone)
        #expect(unverified.basis == .deviceTimeUnverified)
        #expect(unverified.utc == seconds(1_721_030_400))
        // The device's clock read 2024-07-15T10:00:30 (local, unknown zone) when the gateway's UTC was 08:00:00.
        var withReading = unknownZone
        withReading.reading = DeviceClockFacts.Reading(
            deviceTime: DeviceDateTime(year: 2024, month: 7, day: 15, hours: 10, minutes: 0, seconds: 30),
            fractions256: 128, receivedAt: seconds(1_721_030_400))
        let coincident = DeviceTimeDerivation.derive(.dateTime(july15At8), receivedAt: receipt, clock: withReading)
        #expect(coincident.basis == .coincidentClockReading)
        #expect(coincident.skew == .milliseconds(2 * 3_600_000 + 30_500))
        #expect(coincident.utc == seconds(1_721_030_400 - 2 * 3_600 - 30).advanced(by: .milliseconds(-500)))
    }

    /// A clock the gateway set, read 40 s fast: within the tolerance the setting stands and the skew is recorded;
    /// a clock someone moved by an hour no longer means UTC, and the reading's offset is used instead.
    @Test func theSkewIsMeasuredAndBeyondTheToleranceTheReadingWins() {
        var clock = DeviceClockFacts(setting: .setByGatewayInUTC)
        clock.reading = DeviceClockFacts.Reading(
            deviceTime: DeviceDateTime(year: 2024, month: 7, day: 15, hours: 8, minutes: 0, seconds: 40), receivedAt: seconds(1_721_030_400))
        let slight = DeviceTimeDerivation.derive(.dateTime(july15At8), receivedAt: receipt, clock: clock)
        #expect(slight.basis == .clockSetByGateway)
        #expect(slight.skew == .seconds(40))
        #expect(slight.utc == seconds(1_721_030_400))
        clock.reading?.deviceTime.hours = 9
        let moved = DeviceTimeDerivation.derive(.dateTime(july15At8), receivedAt: receipt, clock: clock)
        #expect(moved.basis == .coincidentClockReading)
        #expect(moved.skew == .seconds(3_640))
        #expect(moved.utc == seconds(1_721_030_400 - 3_640))
        // With a local-time setting the skew is measured after the zone: New York's clock read 04:00:05 at 08:00Z.
        let newYork = DeviceClockFacts(
            setting: .localTime(LocalTimeInformation(timeZoneQuarterHours: -20, dstOffset: .daylightTime)),
            reading: DeviceClockFacts.Reading(
                deviceTime: DeviceDateTime(year: 2024, month: 7, day: 15, hours: 4, minutes: 0, seconds: 5), receivedAt: seconds(1_721_030_400)))
        let local = DeviceTimeDerivation.derive(.dateTime(july15At8), receivedAt: receipt, clock: newYork)
        #expect(local.basis == .localTimeWithOffset)
        #expect(local.skew == .seconds(5))
    }

    @Test func aReadingWithoutTimeOrWithTheClockNotSetGetsItsReceiptTime() {
        let clock = DeviceClockFacts(setting: .setByGatewayInUTC)
        for raw: ReadingTime in [.none, .clockNotSet(july15At8), .clockNotSet(nil),
                                 .dateTime(DeviceDateTime(year: 0, month: 0, day: 0, hours: 8, minutes: 0, seconds: 0))] {
            let derived = DeviceTimeDerivation.derive(raw, receivedAt: receipt, clock: clock)
            #expect(derived.utc == receipt, "\(raw)")
            #expect(derived.basis == .receipt, "\(raw)")
            #expect(derived.raw == raw)
        }
        // A year a Timestamp cannot hold (Date Time allows 9999) is no usable time either.
        let far = DeviceDateTime(year: 9_999, month: 12, day: 31, hours: 0, minutes: 0, seconds: 0)
        #expect(DeviceTimeDerivation.derive(.dateTime(far), receivedAt: receipt, clock: clock).basis == .receipt)
    }

    /// GLS v1.0 Glucose Measurement: Base Time plus the Time Offset (sint16 minutes) is the user-facing time.
    @Test func glucoseBaseTimePlusItsSignedOffset() {
        let clock = DeviceClockFacts(setting: .setByGatewayInUTC)
        #expect(DeviceTimeDerivation.derive(.dateTime(july15At8, offsetMinutes: 90), receivedAt: receipt, clock: clock).utc == seconds(1_721_030_400 + 5_400))
        #expect(DeviceTimeDerivation.derive(.dateTime(july15At8, offsetMinutes: -30), receivedAt: receipt, clock: clock).utc == seconds(1_721_030_400 - 1_800))
        #expect(DeviceTimeDerivation.derive(.dateTime(july15At8, offsetMinutes: .min), receivedAt: receipt, clock: clock).utc == seconds(1_721_030_400 - 32_768 * 60))
    }

    /// CGMS v1.0.1: the session start (Date Time with its zone and DST) plus the time offset in minutes.
    @Test func cgmReadingsCountFromTheSessionStart() {
        let start = DeviceClockFacts.CGMSessionStart(
            dateTime: july15At8, localTime: LocalTimeInformation(timeZoneQuarterHours: 4, dstOffset: .daylightTime))  // Berlin
        let clock = DeviceClockFacts(cgmSessionStart: start)
        let derived = DeviceTimeDerivation.derive(.cgmTimeOffset(minutes: 1_445), receivedAt: receipt, clock: clock)
        #expect(derived.basis == .cgmSessionStart)
        #expect(derived.utc == seconds(1_721_023_200 + 1_445 * 60))
        #expect(DeviceTimeDerivation.derive(.cgmTimeOffset(minutes: 5), receivedAt: receipt, clock: DeviceClockFacts()).basis == .receipt)
        // A session start without a known zone is read the way the clock's setting says.
        var unzoned = start
        unzoned.localTime = LocalTimeInformation(timeZoneQuarterHours: nil, dstOffset: .unknown)
        let set = DeviceTimeDerivation.derive(
            .cgmTimeOffset(minutes: 5), receivedAt: receipt, clock: DeviceClockFacts(setting: .setByGatewayInUTC, cgmSessionStart: unzoned))
        #expect(set.basis == .clockSetByGateway)
        #expect(set.utc == seconds(1_721_030_400 + 300))
    }
}

@Suite struct TimeWritePolicyTests {
    let now = Timestamp(nanoseconds: 1_717_675_484 * 1_000_000_000 + 500_000_000)  // 2024-06-06T12:04:44.5Z
    let currentTimeBytes: [UInt8] = [0xE8, 0x07, 0x06, 0x06, 0x0C, 0x04, 0x2C, 0x04, 0x80, 0x01]

    @Test func aClockNotSetIsAlwaysWrittenWhateverTheMode() {
        for evidence: TimeWritePolicy.ClockNotSetEvidence in [.plxDeviceClockNotSet, .dateNotKnown, .deviceStatus] {
            let decision = TimeWritePolicy.decide(.init(mode: .whenClockNotSet, target: .currentTime(alsoLocalTimeInformation: false), clockNotSet: evidence, now: now))
            #expect(decision == .write([.init(characteristic: 0x2A2B, bytes: currentTimeBytes)], reason: .clockNotSet(evidence)))
        }
    }

    @Test func writesOnlyWhenConfiguredOtherwise() {
        let target = TimeWritePolicy.Target.currentTime(alsoLocalTimeInformation: true)
        #expect(TimeWritePolicy.decide(.init(mode: .whenClockNotSet, target: target, now: now)) == .keep(reason: .notConfigured))
        let always = TimeWritePolicy.decide(.init(mode: .always, target: target, now: now))
        #expect(always == .write([
            .init(characteristic: 0x2A2B, bytes: currentTimeBytes), .init(characteristic: 0x2A0F, bytes: [0x00, 0x00]),
        ], reason: .configuredAlways))
        let skewMode = TimeWritePolicy.Mode.whenSkewExceeds(.seconds(30))
        #expect(TimeWritePolicy.decide(.init(mode: skewMode, target: target, measuredSkew: .seconds(-29), now: now)) == .keep(reason: .withinTolerance))
        #expect(TimeWritePolicy.decide(.init(mode: skewMode, target: target, now: now)) == .keep(reason: .withinTolerance))
        guard case .write(_, .skewExceeded(let skew)) = TimeWritePolicy.decide(.init(mode: skewMode, target: target, measuredSkew: .seconds(-31), now: now)) else {
            Issue.record("a skew of −31 s exceeds 30 s")
            return
        }
        #expect(skew == .seconds(-31))
    }

    @Test func writesDateTimeWhereTheProfileSaysAndNothingWhereNothingIsWritable() {
        #expect(TimeWritePolicy.decide(.init(mode: .always, target: .dateTime, now: now))
            == .write([.init(characteristic: 0x2A08, bytes: [0xE8, 0x07, 0x06, 0x06, 0x0C, 0x04, 0x2C])], reason: .configuredAlways))
        #expect(TimeWritePolicy.decide(.init(mode: .always, target: .notWritable, clockNotSet: .dateNotKnown, now: now)) == .keep(reason: .notWritable))
        // The earliest Timestamp (Int64.min ns, 1677-09-21T00:12:43.145Z) is still a Date Time: no overflow on the way.
        #expect(TimeWritePolicy.decide(.init(mode: .always, target: .dateTime, now: Timestamp(nanoseconds: .min)))
            == .write([.init(characteristic: 0x2A08, bytes: [0x8D, 0x06, 9, 21, 0, 12, 43])], reason: .configuredAlways))
    }
}
