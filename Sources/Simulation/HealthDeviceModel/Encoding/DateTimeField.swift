import TetherPrimitives

/// The Date Time characteristic's 7 bytes (GATT Specification Supplement): year uint16 (1582...9999, 0 = not
/// known), month (1...12, 0 = not known), day (1...31, 0 = not known), hours, minutes, seconds. Used as the base
/// or time stamp field of BPM, Glucose, Temperature, Weight and PLX, and inside Current Time and CGM Session Start.
public struct DateTimeField: Hashable, Sendable {
    public var year: UInt16
    public var month: UInt8
    public var day: UInt8
    public var hours: UInt8
    public var minutes: UInt8
    public var seconds: UInt8

    public init(year: UInt16, month: UInt8, day: UInt8, hours: UInt8, minutes: UInt8, seconds: UInt8) {
        self.year = year
        self.month = month
        self.day = day
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
    }

    /// The civil date and time of `secondsSinceEpoch` (a device's local clock reading, counted like Unix time),
    /// by Howard Hinnant's `civil_from_days` ("chrono-Compatible Low-Level Date Algorithms", public domain).
    public init(secondsSinceEpoch: Int64) {
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let secondOfDay = secondsSinceEpoch - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        self.init(
            year: UInt16(clamping: year), month: UInt8(month), day: UInt8(day), hours: UInt8(secondOfDay / 3600),
            minutes: UInt8(secondOfDay / 60 % 60), seconds: UInt8(secondOfDay % 60))
    }

    /// Day of week for Day Date Time (GATT Supplement, Day Date Time: 1 = Monday ... 7 = Sunday, 0 = not known), from the
    /// same epoch count (1970-01-01 was a Thursday).
    public static func dayOfWeek(secondsSinceEpoch: Int64) -> UInt8 {
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let mondayBased = ((days + 3) % 7 + 7) % 7  // 0 = Monday
        return UInt8(mondayBased + 1)
    }

    public func write(into writer: inout ByteWriter) {
        writer.write(year)
        for byte in [month, day, hours, minutes, seconds] { writer.write(byte) }
    }

    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 7)
        write(into: &writer)
        return writer.bytes
    }
}
