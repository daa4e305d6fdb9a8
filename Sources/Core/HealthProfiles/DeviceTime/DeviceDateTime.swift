import TetherPrimitives

/// A calendar date and time as a device's own clock shows it: the Date Time characteristic (0x2A08, GATT
/// Specification Supplement §3.70), which Blood Pressure, Temperature, Weight, Glucose and PLX measurements embed as
/// their time stamp and Current Time (0x2A2B) begins with.
///
/// It carries no zone and no offset: what it means in UTC depends on how the device's clock was set (see the time
/// basis the derivation records), so it is kept as read, beside the derived UTC, never replaced by it.
public struct DeviceDateTime: Hashable, Sendable, CustomStringConvertible {
    /// 1582...9999, or 0 when the device does not know the year.
    public var year: UInt16
    /// 1...12, or 0 when not known.
    public var month: UInt8
    /// 1...31, or 0 when not known.
    public var day: UInt8
    public var hours: UInt8
    public var minutes: UInt8
    public var seconds: UInt8

    /// Its size on the wire.
    public static let byteCount = 7

    public init(year: UInt16, month: UInt8, day: UInt8, hours: UInt8, minutes: UInt8, seconds: UInt8) {
        self.year = year
        self.month = month
        self.day = day
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
    }

    /// Why bytes are not a Date Time.
    public enum DecodingError: Error, Hashable, Sendable {
        case truncated(needed: Int, available: Int)
        /// A field outside the range §3.70 allows (0 for "not known" is allowed for year, month and day).
        case outOfRange(field: String, value: Int)
    }

    /// Reads the seven bytes at the reader's position: year (uint16, little-endian), month, day, hours, minutes,
    /// seconds. Fields outside §3.70's ranges are refused rather than clamped: a clamped time would be a wrong time
    /// with nothing to say so.
    public static func decode(from reader: inout ByteReader) throws(DecodingError) -> DeviceDateTime {
        let available = reader.remaining
        guard available >= byteCount,
              let year = reader.readUInt16(), let month = reader.readUInt8(), let day = reader.readUInt8(),
              let hours = reader.readUInt8(), let minutes = reader.readUInt8(), let seconds = reader.readUInt8()
        else { throw .truncated(needed: byteCount, available: available) }
        let value = DeviceDateTime(year: year, month: month, day: day, hours: hours, minutes: minutes, seconds: seconds)
        if let (field, bad) = value.firstFieldOutOfRange { throw .outOfRange(field: field, value: bad) }
        return value
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(year)
        writer.write(month)
        writer.write(day)
        writer.write(hours)
        writer.write(minutes)
        writer.write(seconds)
    }

    /// Whether the date is complete: §3.70 uses 0 in year, month or day for "not known", which is what a device
    /// whose clock was never set reports.
    public var isKnown: Bool { year != 0 && month != 0 && day != 0 }

    /// Seconds since 1970-01-01T00:00:00 reading the fields as if they were UTC, or nil when the date is not known.
    /// The caller applies the offset its time basis says (the device's zone, or none when the gateway set the clock
    /// in UTC); this only does the calendar arithmetic.
    public var secondsSinceEpochAsIfUTC: Int64? {
        guard isKnown else { return nil }
        let days = CivilDate.days(year: Int64(year), month: Int64(month), day: Int64(day))
        return days * 86_400 + Int64(hours) * 3_600 + Int64(minutes) * 60 + Int64(seconds)
    }

    /// The calendar fields of a UTC instant (seconds since the epoch), for writing the gateway's time to a device.
    public init(secondsSinceEpoch: Int64) {
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let secondOfDay = secondsSinceEpoch - days * 86_400
        let (year, month, day) = CivilDate.civil(days: days)
        self.init(
            year: UInt16(clamping: year), month: UInt8(month), day: UInt8(day),
            hours: UInt8(secondOfDay / 3_600), minutes: UInt8(secondOfDay % 3_600 / 60), seconds: UInt8(secondOfDay % 60)
        )
    }

    public var description: String {
        func two(_ value: UInt8) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(year)
        return "\(String(repeating: "0", count: max(0, 4 - yearText.count)))\(yearText)-\(two(month))-\(two(day))"
            + "T\(two(hours)):\(two(minutes)):\(two(seconds))"
    }

    private var firstFieldOutOfRange: (String, Int)? {
        if year != 0 && !(1582...9999).contains(year) { return ("year", Int(year)) }
        if month > 12 { return ("month", Int(month)) }
        if day > 31 { return ("day", Int(day)) }
        if hours > 23 { return ("hours", Int(hours)) }
        if minutes > 59 { return ("minutes", Int(minutes)) }
        if seconds > 59 { return ("seconds", Int(seconds)) }
        if isKnown && Int64(day) > CivilDate.daysIn(month: Int64(month), year: Int64(year)) { return ("day", Int(day)) }
        return nil
    }
}
