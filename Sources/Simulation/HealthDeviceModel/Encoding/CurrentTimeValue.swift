import TetherPrimitives

/// Current Time 0x2A2B (CTS v1.1, GATT Specification Supplement): Exact Time 256 (Day Date Time: Date
/// Time + Day of Week; Fractions256) and Adjust Reason (bit 0 manual update, bit 1 external reference update,
/// bit 2 change of time zone, bit 3 change of DST). 10 bytes.
public struct CurrentTimeValue: Hashable, Sendable {
    public var dateTime: DateTimeField
    public var dayOfWeek: UInt8
    public var fractions256: UInt8
    public var adjustReason: UInt8

    public init(dateTime: DateTimeField, dayOfWeek: UInt8, fractions256: UInt8, adjustReason: UInt8) {
        self.dateTime = dateTime
        self.dayOfWeek = dayOfWeek
        self.fractions256 = fractions256
        self.adjustReason = adjustReason
    }

    /// The value a device whose clock reads `localNanoseconds` (its own wall clock, in Unix-epoch counting) shows.
    public init(localNanoseconds: Int64, adjustReason: UInt8 = 0) {
        let seconds = localNanoseconds >= 0 ? localNanoseconds / 1_000_000_000 : (localNanoseconds - 999_999_999) / 1_000_000_000
        let fraction = localNanoseconds - seconds * 1_000_000_000
        self.init(
            dateTime: DateTimeField(secondsSinceEpoch: seconds), dayOfWeek: DateTimeField.dayOfWeek(secondsSinceEpoch: seconds),
            fractions256: UInt8(fraction * 256 / 1_000_000_000), adjustReason: adjustReason)
    }

    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 10)
        dateTime.write(into: &writer)
        writer.write(dayOfWeek)
        writer.write(fractions256)
        writer.write(adjustReason)
        return writer.bytes
    }
}
