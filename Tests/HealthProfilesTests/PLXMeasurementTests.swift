import Testing
@testable import HealthProfiles

/// PLX Spot-check 0x2A5E and PLX Continuous 0x2A5F (PLXS v1.0.1 §3.1, §3.2). No public test data for these was
/// found (Nordic's library of commit c078e257 has no PLX tests); the vectors are built by hand from the layout.
@Suite struct PLXMeasurementTests {
    /// SpO2 97 %, PR 72 /min, 2024-11-24 13:42:07, status 0x0080 (validated data), device status 0x000020 (low
    /// perfusion), PAI 3.5 %.
    static let spotCheckFull: [UInt8] = [0x0F, 0x61, 0x00, 0x48, 0x00] + dateTimeBytes(2024, 11, 24, 13, 42, 7)
        + [0x80, 0x00, 0x20, 0x00, 0x00, 0x23, 0xF0]

    @Test func spotCheck() throws {
        let value = try #require(try decoded(.plxSpotCheckMeasurement, Self.spotCheckFull).plxSpotCheck)
        #expect(value.reading.spO2.decimal == dec(97) && value.reading.pulseRate.decimal == dec(72))
        #expect(value.measurementStatus?.set == ["validated_data"])
        #expect(value.deviceAndSensorStatus?.set == ["low_perfusion_detected"])
        #expect(value.pulseAmplitudeIndex?.description == "3.5")
        #expect(!value.deviceClockNotSet)
        #expect(value.observations.map(\.metric) == [.oxygenSaturation, .oximeterPulseRate, .pulseAmplitudeIndex])
        #expect(value.observations.allSatisfy { $0.deviceSuppliedTime })
        expectEveryTruncationRefused(.plxSpotCheckMeasurement, Self.spotCheckFull)
    }

    /// "Device Clock is Not Set" (flags bit 4): the stamp is kept in the decoded value, and the observations carry no
    /// device time (the store falls back to the time of receipt).
    @Test func deviceClockNotSet() throws {
        var bytes = Self.spotCheckFull
        bytes[0] |= 0x10
        let value = try #require(try decoded(.plxSpotCheckMeasurement, bytes).plxSpotCheck)
        #expect(value.deviceClockNotSet && value.timeStamp != nil)
        #expect(value.observations.allSatisfy { !$0.deviceSuppliedTime })
    }

    @Test func everySpotCheckFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags, 0x62, 0x00, 0x3C, 0x00]
            if flags & 0x01 != 0 { bytes += dateTimeBytes(2024, 1, 1, 0, 0, 0) }
            if flags & 0x02 != 0 { bytes += le16(0x8000) }
            if flags & 0x04 != 0 { bytes += [0x01, 0x80, 0x00] }
            if flags & 0x08 != 0 { bytes += le16(0x07FF) }
            let value = try #require(try decoded(.plxSpotCheckMeasurement, bytes).plxSpotCheck)
            #expect(value.reading.spO2.decimal == dec(98) && value.reading.pulseRate.decimal == dec(60))
            #expect((value.timeStamp != nil) == (flags & 0x01 != 0))
            #expect(value.measurementStatus?.set == (flags & 0x02 != 0 ? ["invalid_measurement_detected"] : nil))
            #expect(value.deviceAndSensorStatus?.set == (flags & 0x04 != 0 ? ["extended_display_update_ongoing", "sensor_disconnected"] : nil))
            #expect(value.pulseAmplitudeIndex?.status == (flags & 0x08 != 0 ? .nan : nil))
            #expect(value.deviceClockNotSet == (flags & 0x10 != 0))
            #expect(value.trailingBytes == 0)
            expectEveryTruncationRefused(.plxSpotCheckMeasurement, bytes)
        }
    }

    @Test func everyContinuousFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags, 0x61, 0x00, 0x48, 0x00]
            if flags & 0x01 != 0 { bytes += [0x60, 0x00, 0x49, 0x00] }
            if flags & 0x02 != 0 { bytes += [0x5F, 0x00, 0x4A, 0x00] }
            if flags & 0x04 != 0 { bytes += le16(0x0020) }
            if flags & 0x08 != 0 { bytes += [0x00, 0x00, 0x01] }
            if flags & 0x10 != 0 { bytes += [0x23, 0xF0] }
            let value = try #require(try decoded(.plxContinuousMeasurement, bytes).plxContinuous)
            #expect(value.normal.spO2.decimal == dec(97) && value.normal.pulseRate.decimal == dec(72))
            #expect(value.fast?.spO2.decimal == (flags & 0x01 != 0 ? dec(96) : nil))
            #expect(value.slow?.pulseRate.decimal == (flags & 0x02 != 0 ? dec(74) : nil))
            #expect(value.measurementStatus?.set == (flags & 0x04 != 0 ? ["measurement_ongoing"] : nil))
            // Device and sensor status bit 16 is reserved: ignored in `set`, kept in `raw`.
            #expect(value.deviceAndSensorStatus?.raw == (flags & 0x08 != 0 ? 0x01_0000 : nil))
            #expect(value.deviceAndSensorStatus?.set == (flags & 0x08 != 0 ? [] : nil))
            #expect(value.pulseAmplitudeIndex?.decimal == (flags & 0x10 != 0 ? dec(35, -1) : nil))
            #expect(value.trailingBytes == 0)
            #expect(value.observations.allSatisfy { !$0.deviceSuppliedTime })
            expectEveryTruncationRefused(.plxContinuousMeasurement, bytes)
        }
    }
}
