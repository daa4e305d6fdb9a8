import TetherPrimitives

/// Heart Rate Measurement 0x2A37 (HRS v1.0, GATT Specification Supplement), notified.
///
/// Flags: bit 0 value format (0 = uint8, 1 = uint16 bpm); bits 1–2 sensor contact (bit 2 = supported, bit 1 =
/// detected); bit 3 Energy Expended present (uint16, kJ); bit 4 RR-Intervals present (uint16 each, 1/1024 s).
public struct HeartRateMeasurementValue: Hashable, Sendable {
    public enum SensorContact: Hashable, Sendable {
        case notSupported
        case notDetected
        case detected
    }

    public var beatsPerMinute: UInt16
    /// Forces the uint16 format even for a rate below 256 (HRS allows either; a strap may always use one).
    public var wideFormat: Bool
    public var contact: SensorContact
    public var energyExpendedKilojoules: UInt16?
    public var rrIntervals1024ths: [UInt16]

    public init(
        beatsPerMinute: UInt16, wideFormat: Bool = false, contact: SensorContact = .detected,
        energyExpendedKilojoules: UInt16? = nil, rrIntervals1024ths: [UInt16] = []
    ) {
        self.beatsPerMinute = beatsPerMinute
        self.wideFormat = wideFormat
        self.contact = contact
        self.energyExpendedKilojoules = energyExpendedKilojoules
        self.rrIntervals1024ths = rrIntervals1024ths
    }

    public var bytes: [UInt8] {
        let wide = wideFormat || beatsPerMinute > 0xFF
        var flags: UInt8 = wide ? 0x01 : 0
        switch contact {
        case .notSupported: break
        case .notDetected: flags |= 0x04
        case .detected: flags |= 0x06
        }
        if energyExpendedKilojoules != nil { flags |= 0x08 }
        if !rrIntervals1024ths.isEmpty { flags |= 0x10 }
        var writer = ByteWriter()
        writer.write(flags)
        if wide { writer.write(beatsPerMinute) } else { writer.write(UInt8(beatsPerMinute)) }
        if let energyExpendedKilojoules { writer.write(energyExpendedKilojoules) }
        for interval in rrIntervals1024ths { writer.write(interval) }
        return writer.bytes
    }
}
