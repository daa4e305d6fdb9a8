/// CGM Measurement (0x2AA7), Continuous Glucose Monitoring Service v1.0.1 §3.2.
///
/// One characteristic value holds one or more records back to back (CGMS §3.2: a server may put several records in
/// one notification, as many as fit the ATT MTU). Each record: Size (uint8, the record's length **including** the
/// size octet); Flags (uint8); CGM Glucose Concentration (SFLOAT, mg/dL); Time Offset (uint16 minutes since the
/// session start, CGMS §3.2.1.4); Sensor Status Annunciation, up to three octets each present by its flag, in the
/// order Status (flags bit 7), Cal/Temp (bit 6), Warning (bit 5); CGM Trend Information (SFLOAT, (mg/dL)/min,
/// bit 0); CGM Quality (SFLOAT %, bit 1); E2E-CRC (uint16) when the server supports E2E-safety (CGM Feature bit 12:
/// it is not announced in the record's flags). Flags bits 2-4 are reserved for future use and ignored (Core
/// Specification Vol 1 Part E).
///
/// The Size field bounds each record: fields the flags announce must fit in it (else `truncated` naming the field),
/// and octets after them inside the record are skipped, since Size exists so that a collector can step over fields
/// added in later versions. A record whose CRC does not match is refused (`crcMismatch`); CGMS §3.2 has the
/// collector discard it, and one bad record refuses the whole value so that nothing half-checked is stored.
public struct CGMMeasurementRecord: Hashable, Sendable, Encodable {
    public var size: UInt8
    public var flags: UInt8
    public var glucoseConcentration: MedicalFloat
    public var timeOffsetMinutes: UInt16
    public var statusOctet: UInt8?
    public var calTempOctet: UInt8?
    public var warningOctet: UInt8?
    public var trend: MedicalFloat?
    public var quality: MedicalFloat?
    /// The CRC as received, when there was one (it matched, or decoding would have failed).
    public var e2eCRC: UInt16?
    /// Octets inside the record, after the known fields, that were skipped.
    public var skippedBytes: Int

    /// The 24-bit Sensor Status Annunciation with absent octets as zero: Status bits 0-7, Cal/Temp 8-15, Warning
    /// 16-23 (CGMS §3.2.1.5).
    public var sensorStatusAnnunciation: UInt32 {
        UInt32(statusOctet ?? 0) | UInt32(calTempOctet ?? 0) << 8 | UInt32(warningOctet ?? 0) << 16
    }

    public var observations: [HealthObservation] {
        let time = ObservationTime.minutesSinceSessionStart(timeOffsetMinutes)
        var result = [HealthObservation(metric: .cgmGlucose, value: glucoseConcentration.measured, unit: .milligramPerDecilitre, time: time)]
        if let trend { result.append(HealthObservation(metric: .cgmTrend, value: trend.measured, unit: .milligramPerDecilitrePerMinute, time: time)) }
        if let quality { result.append(HealthObservation(metric: .cgmQuality, value: quality.measured, unit: .percent, time: time)) }
        return result
    }
}

/// Whether CGM records end with an E2E-CRC: the CGM Feature characteristic says (bit 12, "E2E-CRC Supported").
public enum CGMCRCPresence: String, Hashable, Sendable, Encodable {
    case absent, present
    /// Without the feature bits (the offline `decode` command): a record with exactly two octets after its known
    /// fields is taken to end with a CRC, which is then checked; any other surplus is skipped.
    case inferredFromSize = "inferred_from_size"
}

public struct CGMMeasurement: Hashable, Sendable, Encodable {
    public var records: [CGMMeasurementRecord]

    /// The smallest record: size, flags, concentration, time offset.
    public static let minimumRecordSize = 6

    public static func decode(_ bytes: ArraySlice<UInt8>, crc: CGMCRCPresence) throws(HealthDecodingError) -> CGMMeasurement {
        var outer = FieldReader(bytes, characteristic: "CGM Measurement")
        var records: [CGMMeasurementRecord] = []
        repeat {
            let index = records.count
            let start = outer.offset
            let size = try outer.uint8("record \(index).size")
            guard Int(size) >= minimumRecordSize else {
                throw outer.error(.invalidField, "record \(index).size", at: start, "\(size) is below the minimum of \(minimumRecordSize)")
            }
            guard outer.remaining >= Int(size) - 1 else {
                throw outer.error(.truncated, "record \(index)", at: start, "size says \(size) bytes, \(outer.remaining + 1) left")
            }
            let range = (bytes.startIndex + start)..<(bytes.startIndex + start + Int(size))
            _ = try outer.bytes("record \(index)", count: Int(size) - 1)
            records.append(try decodeRecord(bytes, range, index: index, crc: crc))
        } while outer.remaining > 0
        return CGMMeasurement(records: records)
    }

    private static func decodeRecord(
        _ value: ArraySlice<UInt8>, _ range: Range<Int>, index: Int, crc: CGMCRCPresence
    ) throws(HealthDecodingError) -> CGMMeasurementRecord {
        // Offsets in errors are from the start of the whole value: read the record through a reader over the value
        // prefix that ends where the record ends, positioned at the record's start.
        let valueStart = value.startIndex
        let record = value[range]
        var reader = FieldReader(value[valueStart..<range.upperBound], characteristic: "CGM Measurement")
        _ = try reader.bytes("record \(index)", count: range.lowerBound - valueStart)
        let field = { (name: String) in "record \(index).\(name)" }
        let size = try reader.uint8(field("size"))
        let flags = try reader.uint8(field("flags"))
        let glucose = try reader.sfloat(field("glucose concentration"))
        let offset = try reader.uint16(field("time offset"))
        let status = flags & 0x80 != 0 ? try reader.uint8(field("status octet")) : nil
        let calTemp = flags & 0x40 != 0 ? try reader.uint8(field("cal/temp octet")) : nil
        let warning = flags & 0x20 != 0 ? try reader.uint8(field("warning octet")) : nil
        let trend = flags & 0x01 != 0 ? try reader.sfloat(field("trend")) : nil
        let quality = flags & 0x02 != 0 ? try reader.sfloat(field("quality")) : nil
        let surplus = reader.remaining
        let hasCRC: Bool = switch crc {
        case .present: true
        case .absent: false
        case .inferredFromSize: surplus == 2
        }
        var received: UInt16?
        var skipped = surplus
        if hasCRC {
            // The CRC is the record's last two octets, computed over every octet before it (CGMS §3.11).
            if surplus < 2 { throw reader.error(.truncated, field("e2e-crc"), "needs 2 bytes, \(surplus) left in the record") }
            let crcStart = record.endIndex - 2
            let value = UInt16(record[crcStart]) | UInt16(record[crcStart + 1]) << 8
            let expected = E2ECRC.compute(record[record.startIndex..<crcStart])
            guard value == expected else {
                throw reader.error(
                    .crcMismatch, field("e2e-crc"), at: crcStart - valueStart,
                    "received 0x\(hex4(value)), computed 0x\(hex4(expected))"
                )
            }
            received = value
            skipped = surplus - 2
        }
        return CGMMeasurementRecord(
            size: size, flags: flags, glucoseConcentration: glucose, timeOffsetMinutes: offset, statusOctet: status,
            calTempOctet: calTemp, warningOctet: warning, trend: trend, quality: quality, e2eCRC: received, skippedBytes: skipped
        )
    }

    public var observations: [HealthObservation] { records.flatMap(\.observations) }
}
