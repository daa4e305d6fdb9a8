import TetherPrimitives

/// Weight Measurement 0x2A9D (WSS v1.0, GATT Specification Supplement), indicated.
///
/// Flags: bit 0 units (0 = SI: weight in 0.005 kg, height in 0.001 m; 1 = imperial: weight in 0.01 lb, height in
/// 0.1 in); bit 1 Time Stamp present; bit 2 User ID present (uint8, 0xFF = unknown user); bit 3 BMI (uint16, 0.1
/// kg/m²) and Height present. Weight 0xFFFF is "Measurement Unsuccessful" (WSS).
public struct WeightMeasurementValue: Hashable, Sendable {
    public enum Units: Hashable, Sendable {
        case si
        case imperial
    }

    public static let measurementUnsuccessful: UInt16 = 0xFFFF

    public var units: Units
    /// In the units' resolution (0.005 kg or 0.01 lb steps).
    public var weightSteps: UInt16
    public var timeStamp: DateTimeField?
    public var userID: UInt8?
    public var bmiAndHeight: (bmiTenths: UInt16, heightSteps: UInt16)?

    public init(units: Units, weightSteps: UInt16, timeStamp: DateTimeField? = nil, userID: UInt8? = nil) {
        self.units = units
        self.weightSteps = weightSteps
        self.timeStamp = timeStamp
        self.userID = userID
    }

    public var bytes: [UInt8] {
        var flags: UInt8 = units == .imperial ? 0x01 : 0
        if timeStamp != nil { flags |= 0x02 }
        if userID != nil { flags |= 0x04 }
        if bmiAndHeight != nil { flags |= 0x08 }
        var writer = ByteWriter()
        writer.write(flags)
        writer.write(weightSteps)
        timeStamp?.write(into: &writer)
        if let userID { writer.write(userID) }
        if let bmiAndHeight {
            writer.write(bmiAndHeight.bmiTenths)
            writer.write(bmiAndHeight.heightSteps)
        }
        return writer.bytes
    }

    public static func == (a: Self, b: Self) -> Bool { a.bytes == b.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
