import HealthDeviceModel
import Testing
import TetherPrimitives

/// The encoders against vectors worked out by hand from the specifications' field tables (cited per test) and,
/// where another project publishes one, its test data. None of them comes from running these encoders.
@Suite struct EncoderGoldenVectorTests {
    /// IEEE 11073-20601 Annex F.8 Table F.1: the SFLOAT special values.
    @Test func sfloatSpecialValues() {
        #expect(SFloat(.nan).bits == 0x07FF)
        #expect(SFloat(.nres).bits == 0x0800)
        #expect(SFloat(.positiveInfinity).bits == 0x07FE)
        #expect(SFloat(.negativeInfinity).bits == 0x0802)
        #expect(SFloat(.reserved).bits == 0x0801)
        #expect(MedicalFloat32(.nan).bits == 0x007F_FFFF)
        #expect(MedicalFloat32(.nres).bits == 0x0080_0000)
        #expect(MedicalFloat32(.positiveInfinity).bits == 0x007F_FFFE)
        #expect(MedicalFloat32(.negativeInfinity).bits == 0x0080_0002)
        #expect(MedicalFloat32(.reserved).bits == 0x0080_0001)
    }

    /// Annex F.8: exponent in the high nibble (two's complement), mantissa in the low 12 bits (two's complement).
    /// 120 mmHg = 120 × 10^0 = 0x0078; 36.4 = 364 × 10^−1 = 0xF16C; −1 × 10^0 = 0x0FFF; 0.0012 kg/L (120 mg/dL) =
    /// 120 × 10^−5 = 0xB078. Mantissas that collide with the special codes are refused.
    @Test func sfloatValues() throws {
        #expect(try #require(SFloat(mantissa: 120, exponent: 0)).bytes == [0x78, 0x00])
        #expect(try #require(SFloat(mantissa: 364, exponent: -1)).bits == 0xF16C)
        #expect(try #require(SFloat(mantissa: -1, exponent: 0)).bits == 0x0FFF)
        #expect(try #require(SFloat(mantissa: 120, exponent: -5)).bits == 0xB078)
        #expect(SFloat(mantissa: 2046, exponent: 0) == nil)  // 0x07FE is +INF
        #expect(SFloat(mantissa: -2047, exponent: 0) == nil)  // 0x0801 is reserved
        #expect(SFloat(mantissa: 1, exponent: 8) == nil)
        // FLOAT: 36.4 °C = 364 × 10^−1 = 0xFF00016C, little-endian on the wire.
        #expect(try #require(MedicalFloat32(mantissa: 364, exponent: -1)).bytes == [0x6C, 0x01, 0x00, 0xFF])
    }

    /// CRC-16/MCRF4XX check value (Greg Cook's "Catalogue of parametrised CRC algorithms", reveng): 0x6F91 for the
    /// ASCII string "123456789". CGMS v1.0.1 names the same polynomial, seed and bit order.
    @Test func cgmE2ECRCMatchesTheCatalogue() {
        #expect(CGMCRC.crc(Array("123456789".utf8)) == 0x6F91)
    }

    /// Current Health's Android Peripheral Framework, GlucoseMeasurementDataTests.kt `testMinimumFromBytes`: flags 0,
    /// sequence 1, base time 2000-01-02 03:04:05 → 00 01 00 D0 07 01 02 03 04 05.
    @Test func glucoseMinimumFromPublishedTest() {
        let value = GlucoseMeasurementValue(
            sequenceNumber: 1, baseTime: DateTimeField(year: 2000, month: 1, day: 2, hours: 3, minutes: 4, seconds: 5))
        #expect(value.bytes == [0x00, 0x01, 0x00, 0xD0, 0x07, 0x01, 0x02, 0x03, 0x04, 0x05])
    }

    /// GATT Specification Supplement Glucose Measurement, all fields: flags 0x1B (time offset, concentration,
    /// status, context follows; kg/L), sequence 0xFFFE (uint16, not signed), offset −5 min, 120 mg/dL as kg/L,
    /// capillary plasma (type 2, low nibble) from a finger (location 1, high nibble) → 0x12, status 0x0001.
    @Test func glucoseEveryField() throws {
        let value = GlucoseMeasurementValue(
            sequenceNumber: 0xFFFE, baseTime: DateTimeField(year: 2026, month: 11, day: 24, hours: 12, minutes: 0, seconds: 9),
            timeOffsetMinutes: -5,
            concentration: .init(value: try #require(SFloat(mantissa: 120, exponent: -5)), unit: .kilogramsPerLitre, type: 2, sampleLocation: 1),
            sensorStatusAnnunciation: 0x0001, contextFollows: true)
        #expect(value.bytes == [0x1B, 0xFE, 0xFF, 0xEA, 0x07, 11, 24, 12, 0, 9, 0xFB, 0xFF, 0x78, 0xB0, 0x12, 0x01, 0x00])
    }

    /// GATT Specification Supplement, Glucose Measurement Context: carbohydrate (1 = breakfast, 45 g = 45 × 10^−3 kg), meal 1 (preprandial).
    @Test func glucoseContext() throws {
        var context = GlucoseContextValue(sequenceNumber: 7)
        context.carbohydrate = (1, try #require(SFloat(mantissa: 45, exponent: -3)))
        context.meal = 1
        #expect(context.bytes == [0x03, 0x07, 0x00, 0x01, 0x2D, 0xD0, 0x01])
    }

    /// BLS v1.1.1: 120/80 mmHg, MAP 93, 2026-11-24 08:30:00, pulse 72, user 1, status 0 → flags 0x1E.
    @Test func bloodPressureMeasurement() throws {
        let value = BloodPressureMeasurementValue(
            unit: .millimetresOfMercury, systolic: try #require(SFloat(mantissa: 120, exponent: 0)),
            diastolic: try #require(SFloat(mantissa: 80, exponent: 0)),
            meanArterialPressure: try #require(SFloat(mantissa: 93, exponent: 0)),
            timeStamp: DateTimeField(year: 2026, month: 11, day: 24, hours: 8, minutes: 30, seconds: 0),
            pulseRate: SFloat(mantissa: 72, exponent: 0), userID: 1, measurementStatus: 0)
        #expect(value.bytes == [
            0x1E, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00, 0xEA, 0x07, 11, 24, 8, 30, 0, 0x48, 0x00, 0x01, 0x00, 0x00,
        ])
        // kPa flag is bit 0 (the one apps read backwards).
        var kilopascals = value
        kilopascals.unit = .kilopascals
        #expect(kilopascals.bytes[0] == 0x1F)
    }

    /// BLS v1.1.1: Intermediate Cuff Pressure has diastolic and MAP set to NaN (0x07FF).
    @Test func intermediateCuffPressure() throws {
        let value = BloodPressureMeasurementValue.intermediateCuffPressure(
            unit: .millimetresOfMercury, cuffPressure: try #require(SFloat(mantissa: 140, exponent: 0)))
        #expect(value.bytes == [0x00, 0x8C, 0x00, 0xFF, 0x07, 0xFF, 0x07])
    }

    /// HRS v1.0: flags 0x16 (uint8 rate, contact supported and detected, RR present), 72 bpm, RR 853/1024 s.
    @Test func heartRate() {
        let value = HeartRateMeasurementValue(beatsPerMinute: 72, contact: .detected, rrIntervals1024ths: [853])
        #expect(value.bytes == [0x16, 0x48, 0x55, 0x03])
        #expect(HeartRateMeasurementValue(beatsPerMinute: 300, contact: .notSupported, energyExpendedKilojoules: 10).bytes
            == [0x09, 0x2C, 0x01, 0x0A, 0x00])
    }

    /// HTS v1.0: 36.4 °C with a time stamp → flags 0x02, FLOAT FF00016C.
    @Test func temperature() throws {
        let value = TemperatureMeasurementValue(
            unit: .celsius, temperature: try #require(MedicalFloat32(mantissa: 364, exponent: -1)),
            timeStamp: DateTimeField(year: 2026, month: 1, day: 2, hours: 3, minutes: 4, seconds: 5))
        #expect(value.bytes == [0x02, 0x6C, 0x01, 0x00, 0xFF, 0xEA, 0x07, 1, 2, 3, 4, 5])
    }

    /// WSS v1.0: 70.5 kg = 14100 × 0.005 kg → 0x3714, user 2 → flags 0x04.
    @Test func weight() {
        #expect(WeightMeasurementValue(units: .si, weightSteps: 14_100, userID: 2).bytes == [0x04, 0x14, 0x37, 0x02])
    }

    /// PLXS v1.0.1: SpO2 97 %, PR 64, device clock not set → flags 0x10.
    @Test func plxSpotCheck() throws {
        let value = PLXSpotCheckValue(
            spO2: try #require(SFloat(mantissa: 97, exponent: 0)), pulseRate: try #require(SFloat(mantissa: 64, exponent: 0)),
            deviceClockNotSet: true)
        #expect(value.bytes == [0x10, 0x61, 0x00, 0x40, 0x00])
    }

    /// CGMS v1.0.1: size 8 (size, flags, SFLOAT, offset, CRC), 100 mg/dL at 15 min, then the MCRF4XX CRC of
    /// the first six bytes.
    @Test func cgmRecord() throws {
        let value = CGMMeasurementValue(glucoseMilligramsPerDecilitre: try #require(SFloat(mantissa: 100, exponent: 0)), timeOffsetMinutes: 15)
        let bytes = value.bytes(withCRC: true)
        #expect(Array(bytes.prefix(6)) == [0x08, 0x00, 0x64, 0x00, 0x0F, 0x00])
        let crc = CGMCRC.crc(bytes.prefix(6))
        #expect(Array(bytes.suffix(2)) == [UInt8(crc & 0xFF), UInt8(crc >> 8)])
        #expect(value.bytes(withCRC: false) == [0x06, 0x00, 0x64, 0x00, 0x0F, 0x00])
    }

    /// Date Time from epoch seconds: 1_700_000_000 is 2023-11-14T22:13:20Z (a Tuesday, day of week 2, GATT
    /// Supplement, Day Date Time); 951_782_400 is 2000-02-29 (the leap day); 0 is 1970-01-01, a Thursday (4).
    @Test func dateTimeFromEpochSeconds() {
        #expect(DateTimeField(secondsSinceEpoch: 1_700_000_000).bytes == [0xE7, 0x07, 11, 14, 22, 13, 20])
        #expect(DateTimeField(secondsSinceEpoch: 951_782_400) == DateTimeField(year: 2000, month: 2, day: 29, hours: 0, minutes: 0, seconds: 0))
        #expect(DateTimeField.dayOfWeek(secondsSinceEpoch: 1_700_000_000) == 2)
        #expect(DateTimeField.dayOfWeek(secondsSinceEpoch: 0) == 4)
        // CTS v1.1: Current Time is 10 bytes; half a second is fractions256 = 128.
        #expect(CurrentTimeValue(localNanoseconds: 1_700_000_000_500_000_000).bytes == [0xE7, 0x07, 11, 14, 22, 13, 20, 2, 128, 0])
    }
}
