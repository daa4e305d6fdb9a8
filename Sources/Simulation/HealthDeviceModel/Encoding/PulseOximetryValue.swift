import TetherPrimitives

/// PLX Spot-check Measurement 0x2A5E (indicated) of PLXS v1.0.1 (GATT Specification Supplement).
///
/// Flags: bit 0 Timestamp present; bit 1 Measurement Status present (uint16); bit 2 Device and Sensor Status
/// present (uint24); bit 3 Pulse Amplitude Index present (SFLOAT, %); bit 4 Device Clock is Not Set. Then SpO2
/// (SFLOAT, %) and PR (SFLOAT, bpm), then the optional fields in flag order.
public struct PLXSpotCheckValue: Hashable, Sendable {
    public var spO2: SFloat
    public var pulseRate: SFloat
    public var timeStamp: DateTimeField?
    public var measurementStatus: UInt16?
    public var deviceAndSensorStatus: UInt32?
    public var pulseAmplitudeIndex: SFloat?
    public var deviceClockNotSet: Bool

    public init(
        spO2: SFloat, pulseRate: SFloat, timeStamp: DateTimeField? = nil, measurementStatus: UInt16? = nil,
        deviceAndSensorStatus: UInt32? = nil, pulseAmplitudeIndex: SFloat? = nil, deviceClockNotSet: Bool = false
    ) {
        self.spO2 = spO2
        self.pulseRate = pulseRate
        self.timeStamp = timeStamp
        self.measurementStatus = measurementStatus
        self.deviceAndSensorStatus = deviceAndSensorStatus
        self.pulseAmplitudeIndex = pulseAmplitudeIndex
        self.deviceClockNotSet = deviceClockNotSet
    }

    public var bytes: [UInt8] {
        var flags: UInt8 = 0
        if timeStamp != nil { flags |= 0x01 }
        if measurementStatus != nil { flags |= 0x02 }
        if deviceAndSensorStatus != nil { flags |= 0x04 }
        if pulseAmplitudeIndex != nil { flags |= 0x08 }
        if deviceClockNotSet { flags |= 0x10 }
        var writer = ByteWriter()
        writer.write(flags)
        writer.write(spO2.bits)
        writer.write(pulseRate.bits)
        timeStamp?.write(into: &writer)
        if let measurementStatus { writer.write(measurementStatus) }
        if let deviceAndSensorStatus { writer.writeUInt24(deviceAndSensorStatus) }
        if let pulseAmplitudeIndex { writer.write(pulseAmplitudeIndex.bits) }
        return writer.bytes
    }
}

/// PLX Continuous Measurement 0x2A5F (notified) of PLXS v1.0.1 (GATT Specification Supplement).
///
/// Flags: bit 0 SpO2PR-Fast present; bit 1 SpO2PR-Slow present; bit 2 Measurement Status present; bit 3 Device and
/// Sensor Status present; bit 4 Pulse Amplitude Index present. Then SpO2PR-Normal (SpO2 and PR, SFLOAT each),
/// the Fast and Slow pairs, and the optional fields in flag order.
public struct PLXContinuousValue: Hashable, Sendable {
    public var spO2: SFloat
    public var pulseRate: SFloat
    public var fast: (spO2: SFloat, pulseRate: SFloat)?
    public var slow: (spO2: SFloat, pulseRate: SFloat)?
    public var measurementStatus: UInt16?
    public var deviceAndSensorStatus: UInt32?
    public var pulseAmplitudeIndex: SFloat?

    public init(spO2: SFloat, pulseRate: SFloat) {
        self.spO2 = spO2
        self.pulseRate = pulseRate
    }

    public var bytes: [UInt8] {
        var flags: UInt8 = 0
        if fast != nil { flags |= 0x01 }
        if slow != nil { flags |= 0x02 }
        if measurementStatus != nil { flags |= 0x04 }
        if deviceAndSensorStatus != nil { flags |= 0x08 }
        if pulseAmplitudeIndex != nil { flags |= 0x10 }
        var writer = ByteWriter()
        writer.write(flags)
        writer.write(spO2.bits)
        writer.write(pulseRate.bits)
        for pair in [fast, slow].compactMap({ $0 }) {
            writer.write(pair.spO2.bits)
            writer.write(pair.pulseRate.bits)
        }
        if let measurementStatus { writer.write(measurementStatus) }
        if let deviceAndSensorStatus { writer.writeUInt24(deviceAndSensorStatus) }
        if let pulseAmplitudeIndex { writer.write(pulseAmplitudeIndex.bits) }
        return writer.bytes
    }

    public static func == (a: Self, b: Self) -> Bool { a.bytes == b.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
