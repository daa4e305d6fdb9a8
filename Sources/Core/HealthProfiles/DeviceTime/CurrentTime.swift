import TetherPrimitives

/// The Current Time characteristic (0x2A2B, CTS v1.1 §3.1; GATT Specification Supplement, Current Time): Exact Time 256
/// (Date Time, Day of Week, Fractions256) then Adjust Reason, ten bytes.
public struct CurrentTime: Hashable, Sendable {
    public var dateTime: DeviceDateTime
    /// 1 (Monday) … 7 (Sunday), 0 when not known (GSS, Day of Week).
    public var dayOfWeek: UInt8
    /// 1/256 s after `dateTime`'s second.
    public var fractions256: UInt8
    public var adjustReason: AdjustReason

    public static let byteCount = 10

    public init(dateTime: DeviceDateTime, dayOfWeek: UInt8, fractions256: UInt8, adjustReason: AdjustReason) {
        self.dateTime = dateTime
        self.dayOfWeek = dayOfWeek
        self.fractions256 = fractions256
        self.adjustReason = adjustReason
    }

    /// CTS v1.1 §3.1 Adjust Reason bits. Bits 4–7 are reserved for future use: they are kept as read (so a
    /// round trip is exact) but mean nothing here, and the gateway never sets them.
    public struct AdjustReason: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let manualTimeUpdate = AdjustReason(rawValue: 0x01)
        public static let externalReferenceTimeUpdate = AdjustReason(rawValue: 0x02)
        public static let changeOfTimeZone = AdjustReason(rawValue: 0x04)
        public static let changeOfDST = AdjustReason(rawValue: 0x08)
    }

    public enum DecodingError: Error, Hashable, Sendable {
        case truncated(needed: Int, available: Int)
        case dateTime(DeviceDateTime.DecodingError)
        /// Day of Week 8…255 is reserved (GSS, Day of Week).
        case dayOfWeekOutOfRange(UInt8)
    }

    /// Reads exactly ten bytes; a longer value is refused as well (CTS v1.1 §3.1 defines no extension).
    public static func decode(_ bytes: [UInt8]) throws(DecodingError) -> CurrentTime {
        guard bytes.count == byteCount else { throw .truncated(needed: byteCount, available: bytes.count) }
        var reader = ByteReader(bytes)
        let dateTime: DeviceDateTime
        do throws(DeviceDateTime.DecodingError) {
            dateTime = try DeviceDateTime.decode(from: &reader)
        } catch {
            throw .dateTime(error)
        }
        guard let day = reader.readUInt8(), let fractions = reader.readUInt8(), let reason = reader.readUInt8() else {
            throw .truncated(needed: byteCount, available: bytes.count)
        }
        guard day <= 7 else { throw .dayOfWeekOutOfRange(day) }
        return CurrentTime(dateTime: dateTime, dayOfWeek: day, fractions256: fractions, adjustReason: AdjustReason(rawValue: reason))
    }

    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: Self.byteCount)
        dateTime.encode(into: &writer)
        writer.write(dayOfWeek)
        writer.write(fractions256)
        writer.write(adjustReason.rawValue)
        return writer.bytes
    }

    /// The gateway's time in UTC as a Current Time value, for writing to a device (the gateway sets device clocks
    /// in UTC; see `TimeWritePolicy`). Nil for an instant before 1582 or after 9999, which Date Time cannot hold.
    public init?(utc instant: Timestamp, adjustReason: AdjustReason) {
        let (seconds, nanoseconds) = EpochArithmetic.split(instant)
        let dateTime = DeviceDateTime(secondsSinceEpoch: seconds)
        guard dateTime.isKnown, (1582...9999).contains(dateTime.year) else { return nil }
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        // 1970-01-01 was a Thursday (ISO weekday 4); GSS Day of Week numbers Monday 1 … Sunday 7 as ISO 8601 does.
        let weekday = UInt8(((days % 7) + 7 + 3) % 7 + 1)
        self.init(
            dateTime: dateTime, dayOfWeek: weekday, fractions256: UInt8(nanoseconds * 256 / 1_000_000_000),
            adjustReason: adjustReason)
    }
}
