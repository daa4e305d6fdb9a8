/// The Bluetooth SIG 16-bit UUIDs the simulated health devices use (Assigned Numbers: GATT services,
/// characteristics), in one place.
public enum HealthUUID {
    // Services.
    public static let currentTimeService: UInt16 = 0x1805
    public static let glucoseService: UInt16 = 0x1808
    public static let healthThermometerService: UInt16 = 0x1809
    public static let deviceInformationService: UInt16 = 0x180A
    public static let heartRateService: UInt16 = 0x180D
    public static let bloodPressureService: UInt16 = 0x1810
    public static let userDataService: UInt16 = 0x181C
    public static let weightScaleService: UInt16 = 0x181D
    public static let continuousGlucoseMonitoringService: UInt16 = 0x181F
    public static let pulseOximeterService: UInt16 = 0x1822

    // Characteristics.
    public static let temperatureMeasurement: UInt16 = 0x2A1C
    public static let intermediateTemperature: UInt16 = 0x2A1E
    public static let currentTime: UInt16 = 0x2A2B
    public static let glucoseMeasurement: UInt16 = 0x2A18
    public static let glucoseContext: UInt16 = 0x2A34
    public static let glucoseFeature: UInt16 = 0x2A51
    public static let bloodPressureMeasurement: UInt16 = 0x2A35
    public static let intermediateCuffPressure: UInt16 = 0x2A36
    public static let bloodPressureFeature: UInt16 = 0x2A49
    public static let heartRateMeasurement: UInt16 = 0x2A37
    public static let recordAccessControlPoint: UInt16 = 0x2A52
    public static let plxSpotCheckMeasurement: UInt16 = 0x2A5E
    public static let plxContinuousMeasurement: UInt16 = 0x2A5F
    public static let plxFeatures: UInt16 = 0x2A60
    public static let databaseChangeIncrement: UInt16 = 0x2A99
    public static let userIndex: UInt16 = 0x2A9A
    public static let weightMeasurement: UInt16 = 0x2A9D
    public static let weightScaleFeature: UInt16 = 0x2A9E
    public static let userControlPoint: UInt16 = 0x2A9F
    public static let cgmMeasurement: UInt16 = 0x2AA7
    public static let cgmFeature: UInt16 = 0x2AA8
    public static let cgmSessionStartTime: UInt16 = 0x2AAA
    public static let manufacturerName: UInt16 = 0x2A29
    public static let modelNumber: UInt16 = 0x2A24
    public static let serialNumber: UInt16 = 0x2A25
    public static let firmwareRevision: UInt16 = 0x2A26
    public static let pnpId: UInt16 = 0x2A50

    /// The 128-bit form BlueZ exports: `0000XXXX-0000-1000-8000-00805f9b34fb` (Core Vol 3 Part B §2.5.1).
    public static func full(_ short: UInt16) -> String {
        let hex = String(short, radix: 16)
        return "0000" + String(repeating: "0", count: 4 - hex.count) + hex + "-0000-1000-8000-00805f9b34fb"
    }
}
