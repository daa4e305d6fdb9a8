/// Glucose Measurement (0x2A18), Glucose Service v1.0.1 §3.106 (GLS "Glucose Measurement").
///
/// Wire form: Flags (uint8); Sequence Number (uint16, **unsigned**: 0...65535, a signed read turns record 32768
/// into −32768); Base Time (Date Time, 7 bytes, mandatory); Time Offset (sint16 minutes, **signed**: a negative
/// offset moves the user-facing time back, flags bit 0); Glucose Concentration (SFLOAT) with Type and Sample
/// Location (one uint8: type in the low nibble, location in the high nibble), together when bit 1; Sensor Status
/// Annunciation (uint16, bit 3). Bit 2 is the concentration unit: 0 = kg/L, 1 = mol/L. Bit 4 says a Glucose
/// Measurement Context with the same sequence number follows. Bits 5-7 are reserved for future use and ignored
/// (Core Specification Vol 1 Part E).
public struct GlucoseMeasurement: Hashable, Sendable, Encodable {
    public var flags: UInt8
    public var sequenceNumber: UInt16
    public var baseTime: DeviceDateTime
    /// Minutes to add to the base time for the user-facing time (GLS §3.106.3).
    public var timeOffsetMinutes: Int16?
    public var concentration: MedicalFloat?
    /// kg/L or mol/L (flags bit 2); reported even when no concentration is present.
    public var unit: HealthUnit
    /// 1 capillary whole blood, 2 capillary plasma, 3 venous whole blood, 4 venous plasma, 5 arterial whole blood,
    /// 6 arterial plasma, 7 undetermined whole blood, 8 undetermined plasma, 9 interstitial fluid, 10 control
    /// solution; others reserved.
    public var type: UInt8?
    /// 1 finger, 2 alternate site test, 3 earlobe, 4 control solution, 15 not available; others reserved.
    public var sampleLocation: UInt8?
    public var sensorStatusAnnunciation: GlucoseSensorStatus?
    public var contextInformationFollows: Bool
    public var trailingBytes: Int

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HealthDecodingError) -> GlucoseMeasurement {
        var reader = FieldReader(bytes, characteristic: "Glucose Measurement")
        let flags = try reader.uint8("flags")
        let sequence = try reader.uint16("sequence number")
        let base = try reader.dateTime("base time")
        let offset = flags & 0x01 != 0 ? try reader.sint16("time offset") : nil
        var concentration: MedicalFloat?
        var typeAndLocation: UInt8?
        if flags & 0x02 != 0 {
            concentration = try reader.sfloat("glucose concentration")
            typeAndLocation = try reader.uint8("type-sample location")
        }
        let status = flags & 0x08 != 0 ? GlucoseSensorStatus(raw: try reader.uint16("sensor status annunciation")) : nil
        return GlucoseMeasurement(
            flags: flags, sequenceNumber: sequence, baseTime: base, timeOffsetMinutes: offset, concentration: concentration,
            unit: flags & 0x04 == 0 ? .kilogramPerLitre : .molePerLitre, type: typeAndLocation.map { $0 & 0x0F },
            sampleLocation: typeAndLocation.map { $0 >> 4 }, sensorStatusAnnunciation: status,
            contextInformationFollows: flags & 0x10 != 0, trailingBytes: reader.trailingByteCount()
        )
    }

    /// Base time plus time offset, the time the user saw (GLS §3.106.3), or the base time when it is not known
    /// (an offset cannot be applied to an unknown date).
    public var userFacingTime: DeviceDateTime {
        guard let timeOffsetMinutes, let seconds = baseTime.secondsSinceEpochAsIfUTC else { return baseTime }
        return DeviceDateTime(secondsSinceEpoch: seconds + Int64(timeOffsetMinutes) * 60)
    }

    public var typeName: String? {
        guard let type else { return nil }
        let names = [
            1: "capillary whole blood", 2: "capillary plasma", 3: "venous whole blood", 4: "venous plasma", 5: "arterial whole blood",
            6: "arterial plasma", 7: "undetermined whole blood", 8: "undetermined plasma", 9: "interstitial fluid", 10: "control solution",
        ]
        return names[Int(type)] ?? "reserved (\(type))"
    }

    public var sampleLocationName: String? {
        guard let sampleLocation else { return nil }
        let names = [1: "finger", 2: "alternate site test", 3: "earlobe", 4: "control solution", 15: "not available"]
        return names[Int(sampleLocation)] ?? "reserved (\(sampleLocation))"
    }

    /// One glucose observation when the concentration is present (a record may carry only its status), coded by its
    /// specimen (GlucoseSpecimen) when the record names one.
    public var observations: [HealthObservation] {
        guard let concentration else { return [] }
        let qualifier = [typeName, sampleLocationName].compactMap { $0 }.joined(separator: ", ")
        return [
            HealthObservation(
                metric: .glucose, value: concentration.measured, unit: unit, time: .deviceClock(userFacingTime),
                sequenceNumber: sequenceNumber, qualifier: qualifier.isEmpty ? nil : qualifier,
                specificMDCCode: type.flatMap { GlucoseSpecimen.code(forType: $0)?.code }
            )
        ]
    }
}

/// Sensor Status Annunciation (GLS §3.106.7). Bits 12-15 are reserved for future use and ignored.
public struct GlucoseSensorStatus: Hashable, Sendable, Encodable {
    public var raw: UInt16
    public var set: [String] {
        let names = [
            "device_battery_low", "sensor_malfunction", "sample_size_insufficient", "strip_insertion_error", "strip_type_incorrect",
            "result_higher_than_device_can_process", "result_lower_than_device_can_process", "sensor_temperature_too_high",
            "sensor_temperature_too_low", "sensor_read_interrupted", "general_device_fault", "time_fault",
        ]
        return names.indices.filter { raw & (1 << UInt16($0)) != 0 }.map { names[$0] }
    }
    enum CodingKeys: String, CodingKey { case raw, set }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(raw, forKey: .raw)
        try container.encode(set, forKey: .set)
    }
}
