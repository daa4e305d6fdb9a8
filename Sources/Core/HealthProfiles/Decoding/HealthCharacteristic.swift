import TetherPrimitives

/// The health characteristics this module decodes, by their 16-bit Bluetooth SIG UUIDs (Assigned Numbers §3.8).
public enum HealthCharacteristic: UInt16, Hashable, Sendable, CaseIterable, Encodable, CustomStringConvertible {
    case heartRateMeasurement = 0x2A37
    case bloodPressureMeasurement = 0x2A35
    case intermediateCuffPressure = 0x2A36
    case temperatureMeasurement = 0x2A1C
    case intermediateTemperature = 0x2A1E
    case weightMeasurement = 0x2A9D
    case bodyCompositionMeasurement = 0x2A9C
    case plxSpotCheckMeasurement = 0x2A5E
    case plxContinuousMeasurement = 0x2A5F
    case glucoseMeasurement = 0x2A18
    case glucoseMeasurementContext = 0x2A34
    case cgmMeasurement = 0x2AA7

    public var name: String {
        switch self {
        case .heartRateMeasurement: "Heart Rate Measurement"
        case .bloodPressureMeasurement: "Blood Pressure Measurement"
        case .intermediateCuffPressure: "Intermediate Cuff Pressure"
        case .temperatureMeasurement: "Temperature Measurement"
        case .intermediateTemperature: "Intermediate Temperature"
        case .weightMeasurement: "Weight Measurement"
        case .bodyCompositionMeasurement: "Body Composition Measurement"
        case .plxSpotCheckMeasurement: "PLX Spot-check Measurement"
        case .plxContinuousMeasurement: "PLX Continuous Measurement"
        case .glucoseMeasurement: "Glucose Measurement"
        case .glucoseMeasurementContext: "Glucose Measurement Context"
        case .cgmMeasurement: "CGM Measurement"
        }
    }

    /// Live values that are shown and never stored (BLS §3.2, HTS §3.2).
    public var isIntermediate: Bool { self == .intermediateCuffPressure || self == .intermediateTemperature }

    /// `0x2A35`.
    public var shortUUID: String { "0x" + hex4(rawValue) }

    /// The full 128-bit form on the Bluetooth base UUID (Core Specification Vol 3 Part B §2.5.1), lower case as BlueZ
    /// spells it.
    public var uuid: String { "0000\(hex4(rawValue).lowercased())-0000-1000-8000-00805f9b34fb" }

    public var description: String { "\(name) (\(shortUUID))" }

    /// Accepts `2A35`, `0x2A35` and the full base-UUID form in either case; nil for anything else, including a
    /// 128-bit UUID that is not on the Bluetooth base.
    public init?(uuidString text: String) {
        var body = text.lowercased()
        if body.count == 36 {
            let suffix = "-0000-1000-8000-00805f9b34fb"
            guard body.hasPrefix("0000"), body.hasSuffix(suffix) else { return nil }
            body = String(body.dropFirst(4).dropLast(suffix.count))
        } else if body.hasPrefix("0x") {
            body = String(body.dropFirst(2))
        }
        guard body.count == 4, let value = UInt16(body, radix: 16) else { return nil }
        self.init(rawValue: value)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(shortUUID)
    }
}

func hex4(_ value: UInt16) -> String { Hex.uppercase4(value) }
