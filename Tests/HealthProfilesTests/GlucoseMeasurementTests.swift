import Testing
@testable import HealthProfiles

/// Glucose Measurement 0x2A18 (GLS v1.0.1).
@Suite struct GlucoseMeasurementTests {
    /// Golden vector: NordicSemiconductor/Android-BLE-Common-Library (commit c078e257), ble-common/src/test/java/
    /// no/nordicsemi/android/ble/common/callback/glucose/GlucoseMeasurementDataCallbackTest.java,
    /// onGlucoseMeasurementReceived: sequence 1, 2019-02-27 11:10:30, offset −5 min, 30 kg/L, type 2 (capillary
    /// plasma), location 1 (finger), status 0x0105; context follows. Its onInvalidDataReceived lacks the offset's
    /// second byte.
    static let nordic: [UInt8] = [0b011011, 1, 0, 0xE3, 0x07, 2, 27, 11, 10, 30, 0xFB, 0xFF, 30, 0, 0x12, 0b101, 0b1]
    static let nordicInvalid: [UInt8] = [0b011011, 0, 0, 0xE2, 0x07, 4, 26, 11, 9, 30, 30, 0, 0x12, 0b101, 0b1]

    @Test func nordicGoldenVector() throws {
        let value = try #require(try decoded(.glucoseMeasurement, Self.nordic).glucose)
        #expect(value.sequenceNumber == 1)
        #expect(value.baseTime == DeviceDateTime(year: 2019, month: 2, day: 27, hours: 11, minutes: 10, seconds: 30))
        #expect(value.timeOffsetMinutes == -5)
        #expect(value.userFacingTime == DeviceDateTime(year: 2019, month: 2, day: 27, hours: 11, minutes: 5, seconds: 30))
        #expect(value.concentration?.decimal == dec(30) && value.unit == .kilogramPerLitre)
        #expect(value.type == 2 && value.sampleLocation == 1)
        #expect(value.sensorStatusAnnunciation?.raw == 261)
        #expect(value.sensorStatusAnnunciation?.set == ["device_battery_low", "sample_size_insufficient", "sensor_temperature_too_low"])
        #expect(value.contextInformationFollows)
        let observation = try #require(value.observations.first)
        // Capillary plasma: MDC_CONC_GLU_CAPILLARY_PLASMA, partition 2 term 29116 (IEEE 11073-10417).
        #expect(observation.metric == .glucose && observation.mdcCode == 160_188 && observation.sequenceNumber == 1)
        #expect(observation.canonicalUnit == .milligramPerDecilitre && observation.canonicalValue == .exact(dec(3_000_000)))
        #expect(observation.qualifier == "capillary plasma, finger")
        #expect(observation.time == .deviceClock(value.userFacingTime))
    }

    /// Each GLS type (§3.106.5) is its own IEEE 11073-10417 term in partition 2 (131072 + term), as the public
    /// nomenclature headers list them (e.g. the Antidote 11073 agent's nomenclature.h: CAPILLARY_WHOLEBLOOD 29112 …
    /// ISF 29140; the 10417-2015 UNDETERMINED_WHOLEBLOOD 29292 and UNDETERMINED_PLASMA 29296, which HL7 PHD
    /// examples write as 160368). A record with no type, or a reserved one, is MDC_CONC_GLU_GEN (term 28948).
    @Test(arguments: [
        (UInt8(1), UInt32(160_184)), (2, 160_188), (3, 160_192), (4, 160_196), (5, 160_200), (6, 160_204),
        (7, 160_364), (8, 160_368), (9, 160_212), (10, 160_208), (0, 160_020), (11, 160_020), (15, 160_020),
    ])
    func eachSpecimenTypeHasItsOwnCode(type: UInt8, code: UInt32) throws {
        // Flags 0x02 (concentration present), sequence 7, 2026-01-02 03:04:05, 80 mg/dL as SFLOAT 80e-5 kg/L, then
        // Type-Sample Location: finger (1) in the high nibble, the type in the low one.
        let bytes: [UInt8] = [0x02, 7, 0, 0xEA, 0x07, 1, 2, 3, 4, 5, 0x50, 0xB0, 0x10 | type]
        let observation = try #require(try decoded(.glucoseMeasurement, bytes).glucose?.observations.first)
        #expect(observation.metric == .glucose)
        #expect(observation.mdcCode == code)
        // Read back to a glucose metric (interstitial fluid's code is also the CGM's, MDC_CONC_GLU_ISF).
        #expect([.glucose, .cgmGlucose].contains(HealthMetric.named(mdcCode: code)))
    }

    @Test func nordicInvalidVectorAndEveryTruncation() {
        // 15 bytes: the offset is read from bytes 10-11 (30, 0), the concentration from 12-13 (0x12, 0b101), the
        // type-sample location from 14 (0b1), and no bytes are left for the sensor status annunciation.
        #expect(refusal(.glucoseMeasurement, Self.nordicInvalid)?.field == "sensor status annunciation")
        expectEveryTruncationRefused(.glucoseMeasurement, Self.nordic)
    }

    /// The classic bug (xDrip+, nRF Toolbox): the sequence number is uint16. Record 0x8001 is 32769, not −32767.
    @Test func sequenceNumberIsUnsigned() throws {
        let value = try decoded(.glucoseMeasurement, [0x02, 0x01, 0x80] + dateTimeBytes(2024, 1, 1, 8, 0, 0) + [0x5F, 0xB0, 0x11])
        #expect(value.glucose?.sequenceNumber == 32_769)
        #expect(value.observations.first?.sequenceNumber == 32_769)
        #expect(try decoded(.glucoseMeasurement, [0x00, 0xFF, 0xFF] + dateTimeBytes(2024, 1, 1, 8, 0, 0)).glucose?.sequenceNumber == 65_535)
    }

    /// The time offset is signed (sint16 minutes): +90 moves forward, −90 back, across midnight and a year.
    @Test func timeOffsetSign() throws {
        let base = dateTimeBytes(2024, 12, 31, 23, 30, 0)
        let forward = try #require(try decoded(.glucoseMeasurement, [0x01, 0x01, 0x00] + base + le16(90)).glucose)
        #expect(forward.userFacingTime == DeviceDateTime(year: 2025, month: 1, day: 1, hours: 1, minutes: 0, seconds: 0))
        let back = try #require(try decoded(.glucoseMeasurement, [0x01, 0x01, 0x00] + base + le16(UInt16(bitPattern: -90))).glucose)
        #expect(back.timeOffsetMinutes == -90)
        #expect(back.userFacingTime == DeviceDateTime(year: 2024, month: 12, day: 31, hours: 22, minutes: 0, seconds: 0))
    }

    /// kg/L (bit 2 clear) or mol/L (bit 2 set), converted exactly to mg/dL or mmol/L.
    @Test func concentrationUnits() throws {
        // 95 mg/dL = 0.00095 kg/L: SFLOAT exponent -5 (0xB), mantissa 95 (0x05F).
        let mass = try decoded(.glucoseMeasurement, [0x02, 0x01, 0x00] + dateTimeBytes(2024, 1, 1, 8, 0, 0) + [0x5F, 0xB0, 0x11])
        #expect(mass.observations.first?.reportedUnit == .kilogramPerLitre)
        #expect(mass.observations.first?.canonicalValue == .exact(dec(95)))
        // 5.3 mmol/L = 0.0053 mol/L: exponent -4 (0xC), mantissa 53 (0x035).
        let molar = try decoded(.glucoseMeasurement, [0x06, 0x01, 0x00] + dateTimeBytes(2024, 1, 1, 8, 0, 0) + [0x35, 0xC0, 0x11])
        #expect(molar.observations.first?.reportedUnit == .molePerLitre)
        #expect(molar.observations.first?.canonicalValue == .exact(dec(53, -1)))
    }

    @Test func everyFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags] + le16(0xABCD) + dateTimeBytes(2024, 3, 1, 0, 10, 0)
            if flags & 0x01 != 0 { bytes += le16(UInt16(bitPattern: -15)) }
            if flags & 0x02 != 0 { bytes += [0x5F, 0xB0, 0x94] }  // type 4 venous plasma, location 9 (reserved)
            if flags & 0x08 != 0 { bytes += le16(0x0080) }
            let value = try #require(try decoded(.glucoseMeasurement, bytes).glucose)
            #expect(value.sequenceNumber == 0xABCD)
            #expect(value.timeOffsetMinutes == (flags & 0x01 != 0 ? -15 : nil))
            #expect(value.userFacingTime.minutes == (flags & 0x01 != 0 ? 55 : 10))
            #expect(value.concentration?.decimal == (flags & 0x02 != 0 ? dec(95, -5) : nil))
            #expect(value.type == (flags & 0x02 != 0 ? 4 : nil) && value.sampleLocation == (flags & 0x02 != 0 ? 9 : nil))
            #expect(value.unit == (flags & 0x04 != 0 ? .molePerLitre : .kilogramPerLitre))
            #expect(value.sensorStatusAnnunciation?.set == (flags & 0x08 != 0 ? ["sensor_temperature_too_high"] : nil))
            #expect(value.contextInformationFollows == (flags & 0x10 != 0))
            #expect(value.observations.count == (flags & 0x02 != 0 ? 1 : 0))
            #expect(value.trailingBytes == 0)
            expectEveryTruncationRefused(.glucoseMeasurement, bytes)
        }
    }
}
