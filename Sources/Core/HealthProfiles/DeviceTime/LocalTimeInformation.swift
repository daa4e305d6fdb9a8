import TetherPrimitives

/// The Local Time Information characteristic (0x2A0F, CTS v1.1 §3.2; GATT Specification Supplement, Local Time Information): the
/// device's time zone and daylight-saving offset, which together say how its clock's local time relates to UTC.
public struct LocalTimeInformation: Hashable, Sendable {
    /// Offset from UTC in 15-minute steps, −48…+56 (GSS, Time Zone), or nil when not known (−128 on the wire).
    public var timeZoneQuarterHours: Int8?
    public var dstOffset: DSTOffset

    public static let byteCount = 2
    static let unknownTimeZone: Int8 = -128

    public init(timeZoneQuarterHours: Int8?, dstOffset: DSTOffset) {
        self.timeZoneQuarterHours = timeZoneQuarterHours
        self.dstOffset = dstOffset
    }

    /// GSS, DST Offset: in 15-minute steps, with 255 for "not known"; other values are reserved.
    public enum DSTOffset: UInt8, Hashable, Sendable, CaseIterable {
        case standardTime = 0
        case halfAnHourDaylightTime = 2
        case daylightTime = 4
        case doubleDaylightTime = 8
        case unknown = 255

        public var quarterHours: Int? { self == .unknown ? nil : Int(rawValue) }
    }

    public enum DecodingError: Error, Hashable, Sendable {
        case wrongLength(expected: Int, actual: Int)
        /// Outside −48…+56 and not −128 (GSS, Time Zone); Nordic's TimeZoneDataCallback refuses the same.
        case timeZoneOutOfRange(Int8)
        case reservedDSTOffset(UInt8)
    }

    public static func decode(_ bytes: [UInt8]) throws(DecodingError) -> LocalTimeInformation {
        guard bytes.count == byteCount else { throw .wrongLength(expected: byteCount, actual: bytes.count) }
        let zone = Int8(bitPattern: bytes[0])
        guard zone == unknownTimeZone || (-48...56).contains(zone) else { throw .timeZoneOutOfRange(zone) }
        guard let dst = DSTOffset(rawValue: bytes[1]) else { throw .reservedDSTOffset(bytes[1]) }
        return LocalTimeInformation(timeZoneQuarterHours: zone == unknownTimeZone ? nil : zone, dstOffset: dst)
    }

    public var bytes: [UInt8] {
        [UInt8(bitPattern: timeZoneQuarterHours ?? Self.unknownTimeZone), dstOffset.rawValue]
    }

    /// Local time minus UTC (zone plus daylight saving), or nil when either is not known: a clock whose offset is
    /// half known is not known.
    public var offsetFromUTC: Duration? {
        guard let zone = timeZoneQuarterHours, let dst = dstOffset.quarterHours else { return nil }
        return .seconds((Int64(zone) + Int64(dst)) * 15 * 60)
    }
}
