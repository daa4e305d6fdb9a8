/// PLX Spot-check Measurement (0x2A5E), Pulse Oximeter Service v1.0.1 §3.1.
///
/// Wire form: Flags (uint8); SpO2PR-Spot-Check (SpO2 SFLOAT, PR SFLOAT); Timestamp (Date Time, flags bit 0);
/// Measurement Status (uint16, bit 1); Device and Sensor Status (uint24, bit 2); Pulse Amplitude Index (SFLOAT,
/// bit 3). Bit 4 is "Device Clock is Not Set": the time stamp, if any, is not a time the gateway can trust, and the
/// gateway should set the clock. Bits 5-7 are reserved for future use and ignored (Core Specification Vol 1 Part E).
public struct PLXSpotCheckMeasurement: Hashable, Sendable, Encodable {
    public var flags: UInt8
    public var reading: SpO2PulseRate
    public var timeStamp: DeviceDateTime?
    public var measurementStatus: PLXMeasurementStatus?
    public var deviceAndSensorStatus: PLXDeviceAndSensorStatus?
    public var pulseAmplitudeIndex: MedicalFloat?
    public var deviceClockNotSet: Bool
    public var trailingBytes: Int

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HealthDecodingError) -> PLXSpotCheckMeasurement {
        var reader = FieldReader(bytes, characteristic: "PLX Spot-check Measurement")
        let flags = try reader.uint8("flags")
        let reading = try SpO2PulseRate.read(&reader, "spo2pr-spot-check")
        let time = flags & 0x01 != 0 ? try reader.dateTime("timestamp") : nil
        let status = flags & 0x02 != 0 ? PLXMeasurementStatus(raw: try reader.uint16("measurement status")) : nil
        let device = flags & 0x04 != 0 ? PLXDeviceAndSensorStatus(raw: try reader.uint24("device and sensor status")) : nil
        let pai = flags & 0x08 != 0 ? try reader.sfloat("pulse amplitude index") : nil
        return PLXSpotCheckMeasurement(
            flags: flags, reading: reading, timeStamp: time, measurementStatus: status, deviceAndSensorStatus: device,
            pulseAmplitudeIndex: pai, deviceClockNotSet: flags & 0x10 != 0, trailingBytes: reader.trailingByteCount()
        )
    }

    /// A time stamp from a clock the device says is not set is not a device time: the observations carry none,
    /// and the store falls back to the time of receipt (the decoded value keeps the raw stamp).
    public var observations: [HealthObservation] {
        let time: ObservationTime = deviceClockNotSet ? .notSupplied : timeStamp.map { .deviceClock($0) } ?? .notSupplied
        var result = [
            HealthObservation(metric: .oxygenSaturation, value: reading.spO2.measured, unit: .percent, time: time),
            HealthObservation(metric: .oximeterPulseRate, value: reading.pulseRate.measured, unit: .perMinute, time: time),
        ]
        if let pulseAmplitudeIndex {
            result.append(HealthObservation(metric: .pulseAmplitudeIndex, value: pulseAmplitudeIndex.measured, unit: .percent, time: time))
        }
        return result
    }
}
