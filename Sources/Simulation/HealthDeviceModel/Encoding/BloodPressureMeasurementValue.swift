import TetherPrimitives

/// Blood Pressure Measurement 0x2A35 (indicated) and Intermediate Cuff Pressure 0x2A36 (notified), which share one
/// format (BLS v1.1.1; GATT Specification Supplement, Blood Pressure Measurement).
///
/// Flags: bit 0 units (0 = mmHg, 1 = kPa); bit 1 Time Stamp present; bit 2 Pulse Rate present; bit 3 User ID
/// present; bit 4 Measurement Status present. Then systolic, diastolic and mean arterial pressure (SFLOAT each),
/// Time Stamp (Date Time), Pulse Rate (SFLOAT, bpm), User ID (uint8, 0xFF = unknown user), Measurement Status
/// (uint16: bit 0 body movement, bit 1 cuff fit loose, bits 2–3 irregular pulse, bits 3–4 pulse rate range, bit 5
/// measurement position improper).
public struct BloodPressureMeasurementValue: Hashable, Sendable {
    public enum Unit: Hashable, Sendable {
        case millimetresOfMercury
        case kilopascals
    }

    public var unit: Unit
    public var systolic: SFloat
    public var diastolic: SFloat
    public var meanArterialPressure: SFloat
    public var timeStamp: DateTimeField?
    public var pulseRate: SFloat?
    public var userID: UInt8?
    public var measurementStatus: UInt16?

    public init(
        unit: Unit, systolic: SFloat, diastolic: SFloat, meanArterialPressure: SFloat, timeStamp: DateTimeField? = nil,
        pulseRate: SFloat? = nil, userID: UInt8? = nil, measurementStatus: UInt16? = nil
    ) {
        self.unit = unit
        self.systolic = systolic
        self.diastolic = diastolic
        self.meanArterialPressure = meanArterialPressure
        self.timeStamp = timeStamp
        self.pulseRate = pulseRate
        self.userID = userID
        self.measurementStatus = measurementStatus
    }

    /// BLS v1.1.1: Intermediate Cuff Pressure carries the current cuff pressure in the systolic field; the
    /// diastolic and mean arterial pressure fields "shall be set to NaN".
    public static func intermediateCuffPressure(
        unit: Unit, cuffPressure: SFloat, timeStamp: DateTimeField? = nil, userID: UInt8? = nil
    ) -> BloodPressureMeasurementValue {
        BloodPressureMeasurementValue(
            unit: unit, systolic: cuffPressure, diastolic: SFloat(.nan), meanArterialPressure: SFloat(.nan),
            timeStamp: timeStamp, userID: userID)
    }

    public var bytes: [UInt8] {
        var flags: UInt8 = unit == .kilopascals ? 0x01 : 0
        if timeStamp != nil { flags |= 0x02 }
        if pulseRate != nil { flags |= 0x04 }
        if userID != nil { flags |= 0x08 }
        if measurementStatus != nil { flags |= 0x10 }
        var writer = ByteWriter()
        writer.write(flags)
        for value in [systolic, diastolic, meanArterialPressure] { writer.write(value.bits) }
        timeStamp?.write(into: &writer)
        if let pulseRate { writer.write(pulseRate.bits) }
        if let userID { writer.write(userID) }
        if let measurementStatus { writer.write(measurementStatus) }
        return writer.bytes
    }
}
