/// The status fields the Pulse Oximeter Service's two measurements share (PLXS v1.0.1 §3.1.1.3-4, §3.2.1.4-5).
public struct PLXMeasurementStatus: Hashable, Sendable, Encodable {
    /// Bits 0-4 are reserved for future use and ignored (Core Specification Vol 1 Part E).
    public var raw: UInt16
    public var set: [String] {
        let names: [(Int, String)] = [
            (5, "measurement_ongoing"), (6, "early_estimated_data"), (7, "validated_data"), (8, "fully_qualified_data"),
            (9, "data_from_measurement_storage"), (10, "data_for_demonstration"), (11, "data_for_testing"),
            (12, "calibration_ongoing"), (13, "measurement_unavailable"), (14, "questionable_measurement_detected"),
            (15, "invalid_measurement_detected"),
        ]
        return names.filter { raw & (1 << $0.0) != 0 }.map(\.1)
    }
    enum CodingKeys: String, CodingKey { case raw, set }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(raw, forKey: .raw)
        try container.encode(set, forKey: .set)
    }
}

/// Device and Sensor Status (uint24). Bits 16-23 are reserved for future use and ignored.
public struct PLXDeviceAndSensorStatus: Hashable, Sendable, Encodable {
    public var raw: UInt32
    public var set: [String] {
        let names = [
            "extended_display_update_ongoing", "equipment_malfunction_detected", "signal_processing_irregularity_detected",
            "inadequate_signal_detected", "poor_signal_detected", "low_perfusion_detected", "erratic_signal_detected",
            "nonpulsatile_signal_detected", "questionable_pulse_detected", "signal_analysis_ongoing", "sensor_interference_detected",
            "sensor_unconnected_to_user", "unknown_sensor_connected", "sensor_displaced", "sensor_malfunctioning", "sensor_disconnected",
        ]
        return names.indices.filter { raw & (1 << UInt32($0)) != 0 }.map { names[$0] }
    }
    enum CodingKeys: String, CodingKey { case raw, set }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(raw, forKey: .raw)
        try container.encode(set, forKey: .set)
    }
}

/// SpO2 (%) and pulse rate (/min), the pair both PLX measurements carry (SpO2PR-Spot-Check, -Normal, -Fast, -Slow).
public struct SpO2PulseRate: Hashable, Sendable, Encodable {
    public var spO2: MedicalFloat
    public var pulseRate: MedicalFloat

    static func read(_ reader: inout FieldReader, _ name: String) throws(HealthDecodingError) -> SpO2PulseRate {
        SpO2PulseRate(spO2: try reader.sfloat("\(name).spo2"), pulseRate: try reader.sfloat("\(name).pulse rate"))
    }
}
