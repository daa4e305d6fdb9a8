import Testing
import TetherPrimitives
@testable import HealthProfiles

@Suite struct DeviceDateTimeTests {
    /// GATT Specification Supplement §3.70: year LE16, month, day, hours, minutes, seconds.
    @Test func decodesTheSevenBytesInOrder() throws {
        var reader = ByteReader([0xE8, 0x07, 0x0B, 0x18, 0x0D, 0x2A, 0x07, 0xFF])
        let value = try DeviceDateTime.decode(from: &reader)
        #expect(value == DeviceDateTime(year: 2024, month: 11, day: 24, hours: 13, minutes: 42, seconds: 7))
        #expect(reader.remaining == 1)
        #expect(value.description == "2024-11-24T13:42:07")
        var writer = ByteWriter()
        value.encode(into: &writer)
        #expect(writer.bytes == [0xE8, 0x07, 0x0B, 0x18, 0x0D, 0x2A, 0x07])
    }

    @Test func zeroFieldsMeanNotKnown() throws {
        var reader = ByteReader([0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
        let value = try DeviceDateTime.decode(from: &reader)
        #expect(!value.isKnown)
        #expect(value.secondsSinceEpochAsIfUTC == nil)
    }

    @Test func refusesTruncatedAndOutOfRangeFields() {
        var short = ByteReader([0xE8, 0x07, 0x0B, 0x18, 0x0D, 0x2A])
        #expect(throws: DeviceDateTime.DecodingError.truncated(needed: 7, available: 6)) { try DeviceDateTime.decode(from: &short) }
        #expect(short.remaining == 6)
        var badMonth = ByteReader([0xE8, 0x07, 0x0D, 0x01, 0x00, 0x00, 0x00])
        #expect(throws: DeviceDateTime.DecodingError.outOfRange(field: "month", value: 13)) { try DeviceDateTime.decode(from: &badMonth) }
        var badYear = ByteReader([0x2D, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00]) // 1581
        #expect(throws: DeviceDateTime.DecodingError.outOfRange(field: "year", value: 1581)) { try DeviceDateTime.decode(from: &badYear) }
        var february30 = ByteReader([0xE8, 0x07, 0x02, 0x1E, 0x00, 0x00, 0x00])
        #expect(throws: DeviceDateTime.DecodingError.outOfRange(field: "day", value: 30)) { try DeviceDateTime.decode(from: &february30) }
        var leapDay = ByteReader([0xE8, 0x07, 0x02, 0x1D, 0x00, 0x00, 0x00])
        #expect(throws: Never.self) { try DeviceDateTime.decode(from: &leapDay) }
    }

    /// Known instants (date(1) -u -d @N): 2024-11-24T13:42:07Z = 1732455727; 2000-02-29T00:00:00Z = 951782400;
    /// 1582-10-15T00:00:00Z (the first Gregorian day) = -12219292800.
    @Test func convertsToAndFromEpochSeconds() {
        let cases: [(DeviceDateTime, Int64)] = [
            (DeviceDateTime(year: 2024, month: 11, day: 24, hours: 13, minutes: 42, seconds: 7), 1_732_455_727),
            (DeviceDateTime(year: 2000, month: 2, day: 29, hours: 0, minutes: 0, seconds: 0), 951_782_400),
            (DeviceDateTime(year: 1970, month: 1, day: 1, hours: 0, minutes: 0, seconds: 0), 0),
            (DeviceDateTime(year: 1582, month: 10, day: 15, hours: 0, minutes: 0, seconds: 0), -12_219_292_800),
            (DeviceDateTime(year: 9999, month: 12, day: 31, hours: 23, minutes: 59, seconds: 59), 253_402_300_799),
        ]
        for (value, seconds) in cases {
            #expect(value.secondsSinceEpochAsIfUTC == seconds, "\(value)")
            #expect(DeviceDateTime(secondsSinceEpoch: seconds) == value, "\(seconds)")
        }
    }
}
