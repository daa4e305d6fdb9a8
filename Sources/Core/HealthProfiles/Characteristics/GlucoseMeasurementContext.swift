/// Glucose Measurement Context (0x2A34), Glucose Service v1.0.1 §3.107: what was going on around the Glucose
/// Measurement with the same sequence number.
///
/// Wire form: Flags (uint8); Sequence Number (uint16, unsigned); Extended Flags (uint8, when flags bit 7; all its
/// bits reserved for future use, kept and otherwise ignored); Carbohydrate ID (uint8) and Carbohydrate (SFLOAT,
/// kg) when bit 0; Meal (uint8, bit 1); Tester-Health (uint8: tester low nibble, health high nibble; bit 2);
/// Exercise Duration (uint16 s, 0xFFFF = overrun) and Exercise Intensity (uint8 %) when bit 3; Medication ID
/// (uint8) and Medication (SFLOAT, kg, or litres when bit 5) when bit 4; HbA1c (SFLOAT %, bit 6).
public struct GlucoseMeasurementContext: Hashable, Sendable, Encodable {
    public var flags: UInt8
    public var sequenceNumber: UInt16
    public var extendedFlags: UInt8?
    /// 1 breakfast, 2 lunch, 3 dinner, 4 snack, 5 drink, 6 supper, 7 brunch.
    public var carbohydrateID: UInt8?
    public var carbohydrate: MedicalFloat?
    /// 1 preprandial, 2 postprandial, 3 fasting, 4 casual, 5 bedtime.
    public var meal: UInt8?
    /// 1 self, 2 health care professional, 3 lab test, 15 not available.
    public var tester: UInt8?
    /// 1 minor issues, 2 major issues, 3 during menses, 4 under stress, 5 no issues, 15 not available.
    public var health: UInt8?
    public var exerciseDurationSeconds: UInt16?
    public var exerciseIntensityPercent: UInt8?
    /// 1 rapid acting, 2 short acting, 3 intermediate acting, 4 long acting, 5 pre-mixed insulin.
    public var medicationID: UInt8?
    public var medication: MedicalFloat?
    /// kg or L (flags bit 5); meaningful only with a medication.
    public var medicationUnit: HealthUnit
    public var hbA1c: MedicalFloat?
    public var trailingBytes: Int

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HealthDecodingError) -> GlucoseMeasurementContext {
        var reader = FieldReader(bytes, characteristic: "Glucose Measurement Context")
        let flags = try reader.uint8("flags")
        let sequence = try reader.uint16("sequence number")
        let extended = flags & 0x80 != 0 ? try reader.uint8("extended flags") : nil
        var carbohydrateID: UInt8?
        var carbohydrate: MedicalFloat?
        if flags & 0x01 != 0 {
            carbohydrateID = try reader.uint8("carbohydrate id")
            carbohydrate = try reader.sfloat("carbohydrate")
        }
        let meal = flags & 0x02 != 0 ? try reader.uint8("meal") : nil
        let testerHealth = flags & 0x04 != 0 ? try reader.uint8("tester-health") : nil
        var duration: UInt16?
        var intensity: UInt8?
        if flags & 0x08 != 0 {
            duration = try reader.uint16("exercise duration")
            intensity = try reader.uint8("exercise intensity")
        }
        var medicationID: UInt8?
        var medication: MedicalFloat?
        if flags & 0x10 != 0 {
            medicationID = try reader.uint8("medication id")
            medication = try reader.sfloat("medication")
        }
        let hbA1c = flags & 0x40 != 0 ? try reader.sfloat("hba1c") : nil
        return GlucoseMeasurementContext(
            flags: flags, sequenceNumber: sequence, extendedFlags: extended, carbohydrateID: carbohydrateID, carbohydrate: carbohydrate,
            meal: meal, tester: testerHealth.map { $0 & 0x0F }, health: testerHealth.map { $0 >> 4 }, exerciseDurationSeconds: duration,
            exerciseIntensityPercent: intensity, medicationID: medicationID, medication: medication,
            medicationUnit: flags & 0x20 == 0 ? .kilogram : .litre, hbA1c: hbA1c, trailingBytes: reader.trailingByteCount()
        )
    }

    /// The context's quantities, each tied to the measurement by the sequence number. No time: a context takes the
    /// time of the measurement it belongs to (the store joins them by sequence number).
    public var observations: [HealthObservation] {
        var result: [HealthObservation] = []
        func add(_ metric: HealthMetric, _ value: MeasuredValue, _ unit: HealthUnit, _ qualifier: String? = nil) {
            result.append(HealthObservation(metric: metric, value: value, unit: unit, sequenceNumber: sequenceNumber, qualifier: qualifier))
        }
        if let carbohydrate {
            let carbohydrates = [1: "breakfast", 2: "lunch", 3: "dinner", 4: "snack", 5: "drink", 6: "supper", 7: "brunch"]
            add(.carbohydrateIntake, carbohydrate.measured, .kilogram, carbohydrateID.map { carbohydrates[Int($0)] ?? "reserved (\($0))" })
        }
        if let exerciseDurationSeconds {
            let value: MeasuredValue = exerciseDurationSeconds == 0xFFFF ? MeasuredValue(status: .positiveInfinity, decimal: nil)
                : .number(ExactDecimal(Int64(exerciseDurationSeconds)))
            add(.exerciseDuration, value, .second)
        }
        if let exerciseIntensityPercent { add(.exerciseIntensity, .number(ExactDecimal(Int64(exerciseIntensityPercent))), .percent) }
        if let medication {
            let kinds = [1: "rapid acting insulin", 2: "short acting insulin", 3: "intermediate acting insulin", 4: "long acting insulin", 5: "pre-mixed insulin"]
            add(.medication, medication.measured, medicationUnit, medicationID.map { kinds[Int($0)] ?? "reserved (\($0))" })
        }
        if let hbA1c { add(.hbA1c, hbA1c.measured, .percent) }
        return result
    }
}
