import TetherPrimitives

/// Temperature Measurement 0x2A1C (indicated) and Intermediate Temperature 0x2A1E (notified), one format (HTS v1.0;
/// GATT Specification Supplement, Temperature Measurement).
///
/// Flags: bit 0 units (0 = Celsius, 1 = Fahrenheit); bit 1 Time Stamp present; bit 2 Temperature Type present.
/// Then the temperature (FLOAT), the Time Stamp (Date Time) and the Temperature Type (uint8, as in the Temperature Type characteristic: 1 armpit,
/// 2 body, 3 ear, 4 finger, 5 gastro-intestinal tract, 6 mouth, 7 rectum, 8 toe, 9 tympanum).
public struct TemperatureMeasurementValue: Hashable, Sendable {
    public enum Unit: Hashable, Sendable {
        case celsius
        case fahrenheit
    }

    public var unit: Unit
    public var temperature: MedicalFloat32
    public var timeStamp: DateTimeField?
    public var temperatureType: UInt8?

    public init(unit: Unit, temperature: MedicalFloat32, timeStamp: DateTimeField? = nil, temperatureType: UInt8? = nil) {
        self.unit = unit
        self.temperature = temperature
        self.timeStamp = timeStamp
        self.temperatureType = temperatureType
    }

    public var bytes: [UInt8] {
        var flags: UInt8 = unit == .fahrenheit ? 0x01 : 0
        if timeStamp != nil { flags |= 0x02 }
        if temperatureType != nil { flags |= 0x04 }
        var writer = ByteWriter()
        writer.write(flags)
        writer.write(temperature.bits)
        timeStamp?.write(into: &writer)
        if let temperatureType { writer.write(temperatureType) }
        return writer.bytes
    }
}
