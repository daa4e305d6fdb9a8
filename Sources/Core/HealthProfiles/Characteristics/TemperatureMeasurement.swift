/// Temperature Measurement (0x2A1C) and Intermediate Temperature (0x2A1E), Health Thermometer Service v1.0 §3.1 and
/// §3.3 (the same wire form).
///
/// Wire form: Flags (uint8); Temperature Measurement Value (FLOAT, 4 bytes); Time Stamp (Date Time, flags bit 1);
/// Temperature Type (uint8, bit 2). Flags bit 0 is the unit: 0 = Celsius, 1 = Fahrenheit. Bits 3-7 are reserved for
/// future use and ignored (Core Specification Vol 1 Part E).
public struct TemperatureMeasurement: Hashable, Sendable, Encodable {
    public var flags: UInt8
    public var isIntermediate: Bool
    public var unit: HealthUnit
    public var temperature: MedicalFloat
    public var timeStamp: DeviceDateTime?
    /// Temperature Type (GATT Specification Supplement "Temperature Type"; HTS §3.2): 1 armpit, 2 body (general),
    /// 3 ear, 4 finger, 5 gastro-intestinal tract, 6 mouth, 7 rectum, 8 toe, 9 tympanum; others reserved.
    public var temperatureType: UInt8?
    public var trailingBytes: Int

    public var temperatureTypeName: String? {
        guard let temperatureType else { return nil }
        let names = [1: "armpit", 2: "body", 3: "ear", 4: "finger", 5: "gastro-intestinal tract", 6: "mouth", 7: "rectum", 8: "toe", 9: "tympanum"]
        return names[Int(temperatureType)] ?? "reserved (\(temperatureType))"
    }

    public static func decode(_ bytes: ArraySlice<UInt8>, intermediate: Bool) throws(HealthDecodingError) -> TemperatureMeasurement {
        var reader = FieldReader(bytes, characteristic: intermediate ? "Intermediate Temperature" : "Temperature Measurement")
        let flags = try reader.uint8("flags")
        let value = try reader.float("temperature")
        let time = flags & 0x02 != 0 ? try reader.dateTime("time stamp") : nil
        let type = flags & 0x04 != 0 ? try reader.uint8("temperature type") : nil
        return TemperatureMeasurement(
            flags: flags, isIntermediate: intermediate, unit: flags & 0x01 == 0 ? .celsius : .fahrenheit, temperature: value,
            timeStamp: time, temperatureType: type, trailingBytes: reader.trailingByteCount()
        )
    }

    public var observations: [HealthObservation] {
        [
            HealthObservation(
                metric: .bodyTemperature, value: temperature.measured, unit: unit, time: timeStamp.map { .deviceClock($0) } ?? .notSupplied,
                isIntermediate: isIntermediate, qualifier: temperatureTypeName
            )
        ]
    }
}
