/// Weight Measurement (0x2A9D), Weight Scale Service v1.0 §3.2.
///
/// Wire form: Flags (uint8); Weight (uint16: 0.005 kg, or 0.01 lb when flags bit 0 is set); Time Stamp (Date Time,
/// bit 1); User ID (uint8, bit 2; 0xFF = unknown user); BMI (uint16, 0.1 kg/m²) and Height (uint16: 0.001 m, or
/// 0.1 in) together when bit 3. Bits 4-7 are reserved for future use and ignored (Core Specification Vol 1 Part E).
/// A weight of 0xFFFF means "measurement unsuccessful" (WSS §3.2.1.2): status `nan`.
public struct WeightMeasurement: Hashable, Sendable, Encodable {
    public var flags: UInt8
    public var units: String
    public var weightRaw: UInt16
    public var weight: MeasuredValue
    public var weightUnit: HealthUnit
    public var timeStamp: DeviceDateTime?
    public var userID: UInt8?
    public var bmi: MeasuredValue?
    public var height: MeasuredValue?
    public var heightUnit: HealthUnit
    public var trailingBytes: Int

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HealthDecodingError) -> WeightMeasurement {
        var reader = FieldReader(bytes, characteristic: "Weight Measurement")
        let flags = try reader.uint8("flags")
        let system: MeasurementSystem = flags & 0x01 == 0 ? .si : .imperial
        let raw = try reader.uint16("weight")
        let time = flags & 0x02 != 0 ? try reader.dateTime("time stamp") : nil
        let user = flags & 0x04 != 0 ? try reader.uint8("user id") : nil
        var bmi: MeasuredValue?
        var height: MeasuredValue?
        if flags & 0x08 != 0 {
            bmi = .fixedPoint(Int64(try reader.uint16("bmi")), resolution: ExactDecimal(significand: 1, exponent: -1))
            height = .fixedPoint(Int64(try reader.uint16("height")), resolution: system.heightResolution)
        }
        return WeightMeasurement(
            flags: flags, units: system.rawValue, weightRaw: raw,
            weight: MeasurementSystem.fixedPoint(raw, resolution: system.massResolution, unsuccessfulIsFFFF: true),
            weightUnit: system.massUnit, timeStamp: time, userID: user, bmi: bmi, height: height, heightUnit: system.heightUnit,
            trailingBytes: reader.trailingByteCount()
        )
    }

    public var observations: [HealthObservation] {
        let time: ObservationTime = timeStamp.map { .deviceClock($0) } ?? .notSupplied
        var result = [HealthObservation(metric: .bodyMass, value: weight, unit: weightUnit, time: time, userIndex: userID)]
        if let bmi { result.append(HealthObservation(metric: .bodyMassIndex, value: bmi, unit: .kilogramPerSquareMetre, time: time, userIndex: userID)) }
        if let height { result.append(HealthObservation(metric: .bodyHeight, value: height, unit: heightUnit, time: time, userIndex: userID)) }
        return result
    }
}
