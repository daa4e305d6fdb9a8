/// Body Composition Measurement (0x2A9C), Body Composition Service v1.0 §3.2.
///
/// Wire form: Flags (uint16); Body Fat Percentage (uint16, 0.1 %); then, each when its flag is set and in this
/// order: Time Stamp (bit 1), User ID (uint8, bit 2), Basal Metabolism (uint16 kJ, bit 3), Muscle Percentage
/// (uint16 0.1 %, bit 4), Muscle Mass (bit 5), Fat Free Mass (bit 6), Soft Lean Mass (bit 7), Body Water Mass
/// (bit 8), Impedance (uint16 0.1 Ω, bit 9), Weight (bit 10), Height (bit 11). Masses are 0.005 kg or 0.01 lb and
/// height 0.001 m or 0.1 in by flags bit 0. Bit 12 is "Multiple Packet Measurement": the measurement continues in
/// the next indication (BCS §3.2.1.1; a server splits a value that does not fit the ATT MTU), so this value is one
/// part and carries only the fields its own flags announce. Bits 13-15 are reserved for future use and ignored.
/// A body fat percentage of 0xFFFF means "measurement unsuccessful" (BCS §3.2.1.2): status `nan`.
public struct BodyCompositionMeasurement: Hashable, Sendable, Encodable {
    public var flags: UInt16
    public var units: String
    public var multiplePacketMeasurement: Bool
    public var bodyFatPercentage: MeasuredValue
    public var timeStamp: DeviceDateTime?
    public var userID: UInt8?
    public var basalMetabolism: UInt16?
    public var musclePercentage: MeasuredValue?
    public var muscleMass: MeasuredValue?
    public var fatFreeMass: MeasuredValue?
    public var softLeanMass: MeasuredValue?
    public var bodyWaterMass: MeasuredValue?
    public var impedance: MeasuredValue?
    public var weight: MeasuredValue?
    public var height: MeasuredValue?
    public var massUnit: HealthUnit
    public var heightUnit: HealthUnit
    public var trailingBytes: Int

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HealthDecodingError) -> BodyCompositionMeasurement {
        var reader = FieldReader(bytes, characteristic: "Body Composition Measurement")
        let flags = try reader.uint16("flags")
        let system: MeasurementSystem = flags & 0x0001 == 0 ? .si : .imperial
        let tenth = ExactDecimal(significand: 1, exponent: -1)
        let fat = MeasurementSystem.fixedPoint(try reader.uint16("body fat percentage"), resolution: tenth, unsuccessfulIsFFFF: true)
        func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
        func mass(_ field: String, _ reader: inout FieldReader) throws(HealthDecodingError) -> MeasuredValue {
            .fixedPoint(Int64(try reader.uint16(field)), resolution: system.massResolution)
        }
        let time = has(1) ? try reader.dateTime("time stamp") : nil
        let user = has(2) ? try reader.uint8("user id") : nil
        let basal = has(3) ? try reader.uint16("basal metabolism") : nil
        let musclePercentage: MeasuredValue? = has(4) ? .fixedPoint(Int64(try reader.uint16("muscle percentage")), resolution: tenth) : nil
        let muscleMass = has(5) ? try mass("muscle mass", &reader) : nil
        let fatFree = has(6) ? try mass("fat free mass", &reader) : nil
        let softLean = has(7) ? try mass("soft lean mass", &reader) : nil
        let water = has(8) ? try mass("body water mass", &reader) : nil
        let impedance: MeasuredValue? = has(9) ? .fixedPoint(Int64(try reader.uint16("impedance")), resolution: tenth) : nil
        let weight = has(10) ? try mass("weight", &reader) : nil
        let height: MeasuredValue? = has(11) ? .fixedPoint(Int64(try reader.uint16("height")), resolution: system.heightResolution) : nil
        return BodyCompositionMeasurement(
            flags: flags, units: system.rawValue, multiplePacketMeasurement: has(12), bodyFatPercentage: fat, timeStamp: time,
            userID: user, basalMetabolism: basal, musclePercentage: musclePercentage, muscleMass: muscleMass, fatFreeMass: fatFree,
            softLeanMass: softLean, bodyWaterMass: water, impedance: impedance, weight: weight, height: height,
            massUnit: system.massUnit, heightUnit: system.heightUnit, trailingBytes: reader.trailingByteCount()
        )
    }

    public var observations: [HealthObservation] {
        let time: ObservationTime = timeStamp.map { .deviceClock($0) } ?? .notSupplied
        func observation(_ metric: HealthMetric, _ value: MeasuredValue, _ unit: HealthUnit) -> HealthObservation {
            HealthObservation(metric: metric, value: value, unit: unit, time: time, userIndex: userID)
        }
        var result = [observation(.bodyFatPercentage, bodyFatPercentage, .percent)]
        if let basalMetabolism { result.append(observation(.basalMetabolism, .number(ExactDecimal(Int64(basalMetabolism))), .kilojoule)) }
        if let musclePercentage { result.append(observation(.musclePercentage, musclePercentage, .percent)) }
        if let muscleMass { result.append(observation(.muscleMass, muscleMass, massUnit)) }
        if let fatFreeMass { result.append(observation(.fatFreeMass, fatFreeMass, massUnit)) }
        if let softLeanMass { result.append(observation(.softLeanMass, softLeanMass, massUnit)) }
        if let bodyWaterMass { result.append(observation(.bodyWaterMass, bodyWaterMass, massUnit)) }
        if let impedance { result.append(observation(.bodyImpedance, impedance, .ohm)) }
        if let weight { result.append(observation(.bodyMass, weight, massUnit)) }
        if let height { result.append(observation(.bodyHeight, height, heightUnit)) }
        return result
    }
}
