/// PLX Continuous Measurement (0x2A5F), Pulse Oximeter Service v1.0.1 §3.2.
///
/// Wire form: Flags (uint8); SpO2PR-Normal (SpO2 SFLOAT, PR SFLOAT); SpO2PR-Fast (flags bit 0); SpO2PR-Slow (bit 1);
/// Measurement Status (uint16, bit 2); Device and Sensor Status (uint24, bit 3); Pulse Amplitude Index (SFLOAT,
/// bit 4). Bits 5-7 are reserved for future use and ignored (Core Specification Vol 1 Part E). No time stamp: a
/// continuous value is taken when it arrives.
public struct PLXContinuousMeasurement: Hashable, Sendable, Encodable {
    public var flags: UInt8
    public var normal: SpO2PulseRate
    public var fast: SpO2PulseRate?
    public var slow: SpO2PulseRate?
    public var measurementStatus: PLXMeasurementStatus?
    public var deviceAndSensorStatus: PLXDeviceAndSensorStatus?
    public var pulseAmplitudeIndex: MedicalFloat?
    public var trailingBytes: Int

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HealthDecodingError) -> PLXContinuousMeasurement {
        var reader = FieldReader(bytes, characteristic: "PLX Continuous Measurement")
        let flags = try reader.uint8("flags")
        let normal = try SpO2PulseRate.read(&reader, "spo2pr-normal")
        let fast = flags & 0x01 != 0 ? try SpO2PulseRate.read(&reader, "spo2pr-fast") : nil
        let slow = flags & 0x02 != 0 ? try SpO2PulseRate.read(&reader, "spo2pr-slow") : nil
        let status = flags & 0x04 != 0 ? PLXMeasurementStatus(raw: try reader.uint16("measurement status")) : nil
        let device = flags & 0x08 != 0 ? PLXDeviceAndSensorStatus(raw: try reader.uint24("device and sensor status")) : nil
        let pai = flags & 0x10 != 0 ? try reader.sfloat("pulse amplitude index") : nil
        return PLXContinuousMeasurement(
            flags: flags, normal: normal, fast: fast, slow: slow, measurementStatus: status, deviceAndSensorStatus: device,
            pulseAmplitudeIndex: pai, trailingBytes: reader.trailingByteCount()
        )
    }

    /// The normal-averaged pair (the clinical value; fast and slow are other averaging windows of the same signal).
    public var observations: [HealthObservation] {
        var result = [
            HealthObservation(metric: .oxygenSaturation, value: normal.spO2.measured, unit: .percent),
            HealthObservation(metric: .oximeterPulseRate, value: normal.pulseRate.measured, unit: .perMinute),
        ]
        if let pulseAmplitudeIndex {
            result.append(HealthObservation(metric: .pulseAmplitudeIndex, value: pulseAmplitudeIndex.measured, unit: .percent))
        }
        return result
    }
}
