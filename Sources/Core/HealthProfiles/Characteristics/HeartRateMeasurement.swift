/// Heart Rate Measurement (0x2A37), Heart Rate Service v1.0 §3.1 / GATT Specification Supplement "Heart Rate
/// Measurement".
///
/// Wire form: Flags (uint8); Heart Rate Measurement Value (uint8, or uint16 when flags bit 0 is set, beats per
/// minute); Energy Expended (uint16, kJ, when bit 3); RR-Interval (uint16 each, 1/1024 s, when bit 4). Flags bits
/// 1-2 are the Sensor Contact Status. Bits 5-7 are reserved for future use and ignored (Core Specification Vol 1
/// Part E, "reserved for future use": set to zero by the sender, ignored by the receiver).
///
/// The RR-Interval field has no count: it fills the rest of the value (HRS §3.1.1.5), so an odd byte at the end is
/// refused (`invalidField`), and there are never trailing bytes.
public struct HeartRateMeasurement: Hashable, Sendable, Encodable {
    public enum SensorContact: String, Hashable, Sendable, Encodable {
        /// Bits 1-2 = 0 or 1: the sensor cannot tell.
        case notSupported = "not_supported"
        /// 2: supported, contact not detected (poor or no contact).
        case notDetected = "not_detected"
        /// 3: supported and detected.
        case detected
    }

    public var flags: UInt8
    /// Beats per minute.
    public var heartRate: UInt16
    public var valueIsUInt16: Bool
    public var sensorContact: SensorContact
    /// kJ accumulated since the last reset (0xFFFF: the counter saturated, HRS §3.1.1.3).
    public var energyExpended: UInt16?
    /// RR intervals in 1/1024 s, as sent (oldest first).
    public var rrIntervals: [UInt16]

    /// RR intervals in seconds, exactly (1/1024 = 0.0009765625).
    public var rrIntervalSeconds: [ExactDecimal] {
        rrIntervals.map { ExactDecimal(significand: Int64($0) * 9_765_625, exponent: -10).trimmed() }
    }

    static let name = "Heart Rate Measurement"

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HealthDecodingError) -> HeartRateMeasurement {
        var reader = FieldReader(bytes, characteristic: name)
        let flags = try reader.uint8("flags")
        let wide = flags & 0x01 != 0
        let heartRate = wide ? try reader.uint16("heart rate value") : UInt16(try reader.uint8("heart rate value"))
        let contact: SensorContact = switch (flags >> 1) & 0x03 {
        case 2: .notDetected
        case 3: .detected
        default: .notSupported
        }
        let energy = flags & 0x08 != 0 ? try reader.uint16("energy expended") : nil
        var intervals: [UInt16] = []
        if flags & 0x10 != 0 {
            if reader.remaining < 2 { _ = try reader.uint16("rr-interval") }  // flagged present: at least one
            while reader.remaining >= 2 { intervals.append(try reader.uint16("rr-interval")) }
            if reader.remaining == 1 {
                throw reader.error(.invalidField, "rr-interval", "an odd byte after \(intervals.count) intervals of 2 bytes")
            }
        }
        let extra = reader.trailingByteCount()
        return HeartRateMeasurement(
            flags: flags, heartRate: heartRate, valueIsUInt16: wide, sensorContact: contact, energyExpended: energy,
            rrIntervals: intervals, trailingBytes: extra
        )
    }

    /// Octets after the last field the flags announce (ignored; see `HealthDecoder`).
    public var trailingBytes: Int

    public var observations: [HealthObservation] {
        var result = [HealthObservation(metric: .heartRate, value: .number(ExactDecimal(Int64(heartRate))), unit: .perMinute)]
        if let energyExpended {
            result.append(HealthObservation(metric: .energyExpended, value: .number(ExactDecimal(Int64(energyExpended))), unit: .kilojoule))
        }
        for seconds in rrIntervalSeconds {
            result.append(HealthObservation(metric: .rrInterval, value: .number(seconds), unit: .second))
        }
        return result
    }
}
