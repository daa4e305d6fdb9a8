import TetherPrimitives

/// The E2E-CRC of CGMS v1.0.1 (E2E-CRC): "CRC-CCITT generator polynomial g(D) = D^16 + D^12 + D^5 + 1
/// (i.e. 210041 in octal representation) with a seed of 0xFFFF", bits taken least significant first, no final
/// XOR: the catalogue's CRC-16/MCRF4XX (check value 0x6F91 for "123456789"). Sent little-endian after the value.
public enum CGMCRC {
    public static func crc(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x8408 : crc >> 1 }
        }
        return crc
    }

    /// `bytes` followed by their CRC.
    public static func appending(to bytes: [UInt8]) -> [UInt8] {
        let crc = crc(bytes)
        return bytes + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }
}

/// One CGM Measurement record 0x2AA7 (CGMS v1.0.1, GATT Specification Supplement); a notification may
/// carry several records back to back, each starting with its own size.
///
/// Size (uint8, the whole record including itself and the E2E-CRC); Flags: bit 0 Trend Information present, bit 1
/// Quality present, bit 5 Sensor Status Annunciation Warning-Octet present, bit 6 Cal/Temp-Octet present, bit 7
/// Status-Octet present; Glucose Concentration (SFLOAT, mg/dL); Time Offset (uint16, minutes since the session
/// start); the annunciation octets present in the order Status, Cal/Temp, Warning; Trend (SFLOAT, mg/dL/min);
/// Quality (SFLOAT, %); E2E-CRC (uint16) when the device supports it (CGM Feature bit 12).
public struct CGMMeasurementValue: Hashable, Sendable {
    public var glucoseMilligramsPerDecilitre: SFloat
    public var timeOffsetMinutes: UInt16
    public var statusOctet: UInt8?
    public var calTempOctet: UInt8?
    public var warningOctet: UInt8?
    public var trend: SFloat?
    public var quality: SFloat?

    public init(glucoseMilligramsPerDecilitre: SFloat, timeOffsetMinutes: UInt16) {
        self.glucoseMilligramsPerDecilitre = glucoseMilligramsPerDecilitre
        self.timeOffsetMinutes = timeOffsetMinutes
    }

    public func bytes(withCRC: Bool) -> [UInt8] {
        var flags: UInt8 = 0
        if trend != nil { flags |= 0x01 }
        if quality != nil { flags |= 0x02 }
        if warningOctet != nil { flags |= 0x20 }
        if calTempOctet != nil { flags |= 0x40 }
        if statusOctet != nil { flags |= 0x80 }
        var body = ByteWriter()
        body.write(flags)
        body.write(glucoseMilligramsPerDecilitre.bits)
        body.write(timeOffsetMinutes)
        for octet in [statusOctet, calTempOctet, warningOctet].compactMap({ $0 }) { body.write(octet) }
        if let trend { body.write(trend.bits) }
        if let quality { body.write(quality.bits) }
        let size = UInt8(1 + body.bytes.count + (withCRC ? 2 : 0))
        let record = [size] + body.bytes
        return withCRC ? CGMCRC.appending(to: record) : record
    }
}

/// CGM Session Start Time 0x2AAA (CGMS v1.0.1): Date Time, Time Zone (sint8, 15-minute steps, −128 = not
/// known), DST Offset (uint8, 255 = not known), E2E-CRC when supported.
public struct CGMSessionStartTimeValue: Hashable, Sendable {
    public var start: DateTimeField
    public var timeZoneQuarterHours: Int8
    public var dstOffset: UInt8

    public init(start: DateTimeField, timeZoneQuarterHours: Int8, dstOffset: UInt8) {
        self.start = start
        self.timeZoneQuarterHours = timeZoneQuarterHours
        self.dstOffset = dstOffset
    }

    public func bytes(withCRC: Bool) -> [UInt8] {
        var writer = ByteWriter()
        start.write(into: &writer)
        writer.write(UInt8(bitPattern: timeZoneQuarterHours))
        writer.write(dstOffset)
        return withCRC ? CGMCRC.appending(to: writer.bytes) : writer.bytes
    }
}
