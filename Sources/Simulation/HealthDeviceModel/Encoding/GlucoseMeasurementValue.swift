import TetherPrimitives

/// Glucose Measurement 0x2A18 (GLS v1.0.1 of the GATT Specification Supplement), notified in answer to a
/// RACP report.
///
/// Flags: bit 0 Time Offset present (sint16, minutes); bit 1 concentration, type and sample location present;
/// bit 2 concentration units (0 = kg/L, 1 = mol/L); bit 3 Sensor Status Annunciation present (uint16); bit 4
/// Context Information Follows (a Glucose Context with the same sequence number comes next). Then the sequence
/// number (uint16), the Base Time (Date Time), the Time Offset, the concentration (SFLOAT) and one byte with the
/// type in the low nibble (1 capillary whole blood, ... ) and the sample location in the high nibble (1 finger,
/// 2 alternate site test, 3 earlobe, 4 control solution, 15 not available).
public struct GlucoseMeasurementValue: Hashable, Sendable {
    public enum Unit: Hashable, Sendable {
        case kilogramsPerLitre
        case molesPerLitre
    }

    public struct Concentration: Hashable, Sendable {
        public var value: SFloat
        public var unit: Unit
        public var type: UInt8
        public var sampleLocation: UInt8

        public init(value: SFloat, unit: Unit, type: UInt8, sampleLocation: UInt8) {
            self.value = value
            self.unit = unit
            self.type = type
            self.sampleLocation = sampleLocation
        }
    }

    public var sequenceNumber: UInt16
    public var baseTime: DateTimeField
    public var timeOffsetMinutes: Int16?
    public var concentration: Concentration?
    public var sensorStatusAnnunciation: UInt16?
    public var contextFollows: Bool

    public init(
        sequenceNumber: UInt16, baseTime: DateTimeField, timeOffsetMinutes: Int16? = nil,
        concentration: Concentration? = nil, sensorStatusAnnunciation: UInt16? = nil, contextFollows: Bool = false
    ) {
        self.sequenceNumber = sequenceNumber
        self.baseTime = baseTime
        self.timeOffsetMinutes = timeOffsetMinutes
        self.concentration = concentration
        self.sensorStatusAnnunciation = sensorStatusAnnunciation
        self.contextFollows = contextFollows
    }

    public var bytes: [UInt8] {
        var flags: UInt8 = 0
        if timeOffsetMinutes != nil { flags |= 0x01 }
        if let concentration {
            flags |= 0x02
            if concentration.unit == .molesPerLitre { flags |= 0x04 }
        }
        if sensorStatusAnnunciation != nil { flags |= 0x08 }
        if contextFollows { flags |= 0x10 }
        var writer = ByteWriter()
        writer.write(flags)
        writer.write(sequenceNumber)
        baseTime.write(into: &writer)
        if let timeOffsetMinutes { writer.write(UInt16(bitPattern: timeOffsetMinutes)) }
        if let concentration {
            writer.write(concentration.value.bits)
            writer.write((concentration.sampleLocation & 0x0F) << 4 | (concentration.type & 0x0F))
        }
        if let sensorStatusAnnunciation { writer.write(sensorStatusAnnunciation) }
        return writer.bytes
    }
}

/// Glucose Measurement Context 0x2A34 (GATT Specification Supplement), notified right after the measurement
/// with the same sequence number when that one's "context follows" flag is set.
///
/// Flags: bit 0 carbohydrate ID + carbohydrate (SFLOAT, kg) present; bit 1 meal present; bit 2 tester/health
/// present; bit 3 exercise duration (uint16 s) + intensity (uint8 %) present; bit 4 medication ID + medication
/// (SFLOAT) present; bit 5 medication units (0 = kg, 1 = litres); bit 6 HbA1c (SFLOAT, %) present; bit 7 extended
/// flags present (none defined; simulated devices never set it).
public struct GlucoseContextValue: Hashable, Sendable {
    public var sequenceNumber: UInt16
    public var carbohydrate: (id: UInt8, kilograms: SFloat)?
    public var meal: UInt8?
    public var testerHealth: (tester: UInt8, health: UInt8)?
    public var exercise: (durationSeconds: UInt16, intensityPercent: UInt8)?
    public var medication: (id: UInt8, amount: SFloat, inLitres: Bool)?
    public var hbA1cPercent: SFloat?

    public init(sequenceNumber: UInt16) { self.sequenceNumber = sequenceNumber }

    public var bytes: [UInt8] {
        var flags: UInt8 = 0
        if carbohydrate != nil { flags |= 0x01 }
        if meal != nil { flags |= 0x02 }
        if testerHealth != nil { flags |= 0x04 }
        if exercise != nil { flags |= 0x08 }
        if let medication {
            flags |= 0x10
            if medication.inLitres { flags |= 0x20 }
        }
        if hbA1cPercent != nil { flags |= 0x40 }
        var writer = ByteWriter()
        writer.write(flags)
        writer.write(sequenceNumber)
        if let carbohydrate {
            writer.write(carbohydrate.id)
            writer.write(carbohydrate.kilograms.bits)
        }
        if let meal { writer.write(meal) }
        if let testerHealth { writer.write((testerHealth.health & 0x0F) << 4 | (testerHealth.tester & 0x0F)) }
        if let exercise {
            writer.write(exercise.durationSeconds)
            writer.write(exercise.intensityPercent)
        }
        if let medication {
            writer.write(medication.id)
            writer.write(medication.amount.bits)
        }
        if let hbA1cPercent { writer.write(hbA1cPercent.bits) }
        return writer.bytes
    }

    public static func == (a: Self, b: Self) -> Bool { a.bytes == b.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
