import Testing
import TetherPrimitives
@testable import HealthProfiles

/// Current Time (0x2A2B) and Local Time Information (0x2A0F).
///
/// Sources: Nordic Semiconductor's Android-BLE-Common-Library tests TimeZoneDataCallbackTest.java ({1} = +15 min,
/// {-128} = unknown, {60} invalid) and DSTOffsetDataCallbackTest.java ({0} standard, {2} half an hour, {4}
/// daylight, {8} double daylight, {255} unknown, {17} invalid); Stanford Spezi's SpeziBluetooth CurrentTimeTests
/// (2024-06-06 12:04:44, a Thursday, fractions256 128), laid out as CTS v1.1 §3.1 defines the ten bytes. Instants
/// from `date -u -d 2024-06-06T12:04:44Z +%s` = 1717675484 (and `+%u` = 4, Thursday).
@Suite struct DeviceTimeCodecTests {
    let spezi: [UInt8] = [0xE8, 0x07, 0x06, 0x06, 0x0C, 0x04, 0x2C, 0x04, 0x80, 0x00]

    @Test func decodesAndEncodesCurrentTime() throws {
        let value = try CurrentTime.decode(spezi)
        #expect(value.dateTime == DeviceDateTime(year: 2024, month: 6, day: 6, hours: 12, minutes: 4, seconds: 44))
        #expect(value.dayOfWeek == 4)
        #expect(value.fractions256 == 128)
        #expect(value.adjustReason == [])
        #expect(value.bytes == spezi)
        var reasons = spezi
        reasons[9] = 0x05  // manual time update + change of time zone
        #expect(try CurrentTime.decode(reasons).adjustReason == [.manualTimeUpdate, .changeOfTimeZone])
        reasons[9] = 0xF2  // reserved bits are kept as read, not interpreted
        #expect(try CurrentTime.decode(reasons).adjustReason.contains(.externalReferenceTimeUpdate))
        #expect(try CurrentTime.decode(reasons).bytes == reasons)
    }

    @Test func buildsCurrentTimeFromTheGatewaysUTC() {
        let instant = Timestamp(nanoseconds: 1_717_675_484 * 1_000_000_000 + 500_000_000)
        let value = CurrentTime(utc: instant, adjustReason: .manualTimeUpdate)
        #expect(value?.bytes == [0xE8, 0x07, 0x06, 0x06, 0x0C, 0x04, 0x2C, 0x04, 0x80, 0x01])
        // 2024-11-24 is a Sunday (date -u -d 2024-11-24T13:42:07Z +%u = 7); 1970-01-01 a Thursday.
        #expect(CurrentTime(utc: Timestamp(nanoseconds: 1_732_455_727 * 1_000_000_000), adjustReason: [])?.dayOfWeek == 7)
        #expect(CurrentTime(utc: Timestamp(nanoseconds: 0), adjustReason: [])?.dayOfWeek == 4)
        // Before the epoch: 1969-12-31T23:59:59.75Z, a Wednesday.
        let before = CurrentTime(utc: Timestamp(nanoseconds: -250_000_000), adjustReason: [])
        #expect(before?.dateTime == DeviceDateTime(year: 1969, month: 12, day: 31, hours: 23, minutes: 59, seconds: 59))
        #expect(before?.dayOfWeek == 3)
        #expect(before?.fractions256 == 192)
    }

    @Test func refusesBadCurrentTimes() {
        #expect(throws: CurrentTime.DecodingError.truncated(needed: 10, available: 9)) { try CurrentTime.decode(Array(spezi.dropLast())) }
        #expect(throws: CurrentTime.DecodingError.truncated(needed: 10, available: 11)) { try CurrentTime.decode(spezi + [0]) }
        var day = spezi
        day[7] = 8
        #expect(throws: CurrentTime.DecodingError.dayOfWeekOutOfRange(8)) { try CurrentTime.decode(day) }
        var hour = spezi
        hour[4] = 24
        #expect(throws: CurrentTime.DecodingError.dateTime(.outOfRange(field: "hours", value: 24))) { try CurrentTime.decode(hour) }
        for cut in 0..<spezi.count {
            #expect(throws: CurrentTime.DecodingError.self) { try CurrentTime.decode(Array(spezi[..<cut])) }
        }
    }

    @Test func decodesNordicsTimeZoneAndDSTVectors() throws {
        #expect(try LocalTimeInformation.decode([1, 0]).offsetFromUTC == .seconds(15 * 60))
        #expect(try LocalTimeInformation.decode([0x80, 0]).timeZoneQuarterHours == nil)
        #expect(try LocalTimeInformation.decode([0x80, 0]).offsetFromUTC == nil)
        #expect(throws: LocalTimeInformation.DecodingError.timeZoneOutOfRange(60)) { try LocalTimeInformation.decode([60, 0]) }
        let dst: [(UInt8, LocalTimeInformation.DSTOffset)] = [
            (0, .standardTime), (2, .halfAnHourDaylightTime), (4, .daylightTime), (8, .doubleDaylightTime), (255, .unknown),
        ]
        for (byte, offset) in dst { #expect(try LocalTimeInformation.decode([0, byte]).dstOffset == offset) }
        #expect(throws: LocalTimeInformation.DecodingError.reservedDSTOffset(17)) { try LocalTimeInformation.decode([0, 17]) }
        #expect(throws: LocalTimeInformation.DecodingError.wrongLength(expected: 2, actual: 1)) { try LocalTimeInformation.decode([0]) }
        #expect(throws: LocalTimeInformation.DecodingError.wrongLength(expected: 2, actual: 0)) { try LocalTimeInformation.decode([]) }
    }

    /// New York in July: UTC−5 (zone −20) with daylight time (+1 h): UTC−4. Adelaide in January: +9:30 (zone +38)
    /// with daylight time: +10:30. The unknown DST makes the whole offset unknown.
    @Test func offsetsAddZoneAndDaylightTime() throws {
        #expect(try LocalTimeInformation.decode([UInt8(bitPattern: -20), 4]).offsetFromUTC == .seconds(-4 * 3_600))
        #expect(try LocalTimeInformation.decode([38, 4]).offsetFromUTC == .seconds(10 * 3_600 + 1_800))
        #expect(try LocalTimeInformation.decode([UInt8(bitPattern: -48), 0]).offsetFromUTC == .seconds(-12 * 3_600))
        #expect(try LocalTimeInformation.decode([56, 0]).offsetFromUTC == .seconds(14 * 3_600))
        #expect(try LocalTimeInformation.decode([4, 255]).offsetFromUTC == nil)
        #expect(LocalTimeInformation(timeZoneQuarterHours: -20, dstOffset: .daylightTime).bytes == [0xEC, 4])
        #expect(LocalTimeInformation(timeZoneQuarterHours: nil, dstOffset: .unknown).bytes == [0x80, 0xFF])
    }
}
