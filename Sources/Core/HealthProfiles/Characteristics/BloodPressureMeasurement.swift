/// Blood Pressure Measurement (0x2A35) and Intermediate Cuff Pressure (0x2A36), Blood Pressure Service v1.1.1 §3.1
/// and §3.2 (the same wire form).
///
/// Wire form: Flags (uint8); Systolic, Diastolic, Mean Arterial Pressure (SFLOAT each; for Intermediate Cuff
/// Pressure the first is the current cuff pressure and the other two are unused, sent as NaN); Time Stamp (Date Time,
/// 7 bytes, flags bit 1); Pulse Rate (SFLOAT, bit 2); User ID (uint8, bit 3); Measurement Status (uint16, bit 4).
/// Flags bit 0 is the unit: **0 = mmHg, 1 = kPa** (the bit read backwards is IOS-nRF-Toolbox #114). Bits 5-7 are
/// reserved for future use and ignored (Core Specification Vol 1 Part E).
public struct BloodPressureMeasurement: Hashable, Sendable, Encodable {
    public enum PulseRateRange: String, Hashable, Sendable, Encodable {
        case withinRange = "within_range"
        case exceedsUpperLimit = "exceeds_upper_limit"
        case lessThanLowerLimit = "less_than_lower_limit"
        case reserved
    }

    /// Measurement Status (BLS §3.1.1.6). Bits 6-15 are reserved for future use and ignored.
    public struct Status: Hashable, Sendable, Encodable {
        public var raw: UInt16
        public var bodyMovementDetected: Bool { raw & 0x0001 != 0 }
        public var cuffFitTooLoose: Bool { raw & 0x0002 != 0 }
        public var irregularPulseDetected: Bool { raw & 0x0004 != 0 }
        public var pulseRateRange: PulseRateRange {
            switch (raw >> 3) & 0x03 {
            case 0: .withinRange
            case 1: .exceedsUpperLimit
            case 2: .lessThanLowerLimit
            default: .reserved
            }
        }
        public var improperMeasurementPosition: Bool { raw & 0x0020 != 0 }

        enum CodingKeys: String, CodingKey {
            case raw, bodyMovementDetected = "body_movement_detected", cuffFitTooLoose = "cuff_fit_too_loose"
            case irregularPulseDetected = "irregular_pulse_detected", pulseRateRange = "pulse_rate_range"
            case improperMeasurementPosition = "improper_measurement_position"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(raw, forKey: .raw)
            try container.encode(bodyMovementDetected, forKey: .bodyMovementDetected)
            try container.encode(cuffFitTooLoose, forKey: .cuffFitTooLoose)
            try container.encode(irregularPulseDetected, forKey: .irregularPulseDetected)
            try container.encode(pulseRateRange, forKey: .pulseRateRange)
            try container.encode(improperMeasurementPosition, forKey: .improperMeasurementPosition)
        }
    }

    public var flags: UInt8
    public var isIntermediate: Bool
    /// mm[Hg] or kPa, from flags bit 0.
    public var unit: HealthUnit
    /// Systolic, or the current cuff pressure for Intermediate Cuff Pressure.
    public var systolic: MedicalFloat
    public var diastolic: MedicalFloat
    public var meanArterialPressure: MedicalFloat
    public var timeStamp: DeviceDateTime?
    /// Beats per minute.
    public var pulseRate: MedicalFloat?
    /// 0xFF is "unknown user" (BLS §3.1.1.5).
    public var userID: UInt8?
    public var status: Status?
    public var trailingBytes: Int

    public static func decode(_ bytes: ArraySlice<UInt8>, intermediate: Bool) throws(HealthDecodingError) -> BloodPressureMeasurement {
        var reader = FieldReader(bytes, characteristic: intermediate ? "Intermediate Cuff Pressure" : "Blood Pressure Measurement")
        let flags = try reader.uint8("flags")
        let unit: HealthUnit = flags & 0x01 == 0 ? .millimetreOfMercury : .kilopascal
        let systolic = try reader.sfloat(intermediate ? "current cuff pressure" : "systolic")
        let diastolic = try reader.sfloat("diastolic")
        let mean = try reader.sfloat("mean arterial pressure")
        let time = flags & 0x02 != 0 ? try reader.dateTime("time stamp") : nil
        let pulse = flags & 0x04 != 0 ? try reader.sfloat("pulse rate") : nil
        let user = flags & 0x08 != 0 ? try reader.uint8("user id") : nil
        let status = flags & 0x10 != 0 ? Status(raw: try reader.uint16("measurement status")) : nil
        return BloodPressureMeasurement(
            flags: flags, isIntermediate: intermediate, unit: unit, systolic: systolic, diastolic: diastolic,
            meanArterialPressure: mean, timeStamp: time, pulseRate: pulse, userID: user, status: status,
            trailingBytes: reader.trailingByteCount()
        )
    }

    /// Systolic, diastolic, mean and pulse as separate observations; Intermediate Cuff Pressure gives the cuff
    /// pressure (and pulse) only, marked intermediate: its diastolic and mean fields are unused (BLS §3.2).
    public var observations: [HealthObservation] {
        let time: ObservationTime = timeStamp.map { .deviceClock($0) } ?? .notSupplied
        func observation(_ metric: HealthMetric, _ value: MedicalFloat, _ unit: HealthUnit) -> HealthObservation {
            HealthObservation(metric: metric, value: value.measured, unit: unit, time: time, userIndex: userID, isIntermediate: isIntermediate)
        }
        var result: [HealthObservation]
        if isIntermediate {
            result = [observation(.cuffPressure, systolic, unit)]
        } else {
            result = [
                observation(.bloodPressureSystolic, systolic, unit), observation(.bloodPressureDiastolic, diastolic, unit),
                observation(.bloodPressureMean, meanArterialPressure, unit),
            ]
        }
        if let pulseRate { result.append(observation(.pulseRateNonInvasive, pulseRate, .perMinute)) }
        return result
    }
}
