import Testing
@testable import HealthProfiles

/// CGM Measurement 0x2AA7 (CGMS v1.0.1 §3.2) and its E2E-CRC (CGMS §3.11).
@Suite struct CGMMeasurementTests {
    /// Golden vectors: NordicSemiconductor/Android-BLE-Common-Library (commit c078e257), ble-common/src/test/java/
    /// no/nordicsemi/android/ble/common/callback/cgm/ContinuousGlucoseMeasurementDataCallbackTest.java. `_full`:
    /// size 15, flags 0xE3, 12.34 mg/dL, offset 5 min, status 0x02 / cal-temp 0x14 / warning 0xFF, trend 0.2,
    /// quality 99.7, CRC 0x3F8E. `_small`: size 6, 120 mg/dL (12e1), offset 6. `_double`: two such records with
    /// offsets 5 and 6. `_crcError`: size 8 with CRC 0x6F58 where 0x6F59 is right.
    static let full: [UInt8] = [15, 0xE3, 0xD2, 0xE4, 0x05, 0x00, 0x02, 0x14, 0xFF, 0x02, 0xF0, 0xE5, 0xF3, 0x8E, 0x3F]
    static let small: [UInt8] = [6, 0x00, 0x0C, 0x10, 0x06, 0x00]
    static let double: [UInt8] = [6, 0x00, 0x0C, 0x10, 0x05, 0x00, 6, 0x00, 0x0C, 0x10, 0x06, 0x00]
    static let crcError: [UInt8] = [8, 0x00, 0x0C, 0x10, 0x06, 0x00, 0x58, 0x6F]

    /// CRC-16/MCRF4XX check values: "123456789" → 0x6F91 (the CRC catalogue's check value, as Nordic's CRC16Test
    /// MCRF4XX_123456789 asserts), and the CGMS v1.0.1 §3.11 example 3E 01 02 ... 09 → 0x2F01 (Nordic's
    /// MCRF4XX_CGMS, which notes the PDF prints it byte-swapped).
    @Test func crcCheckValues() {
        #expect(E2ECRC.compute(Array("123456789".utf8)) == 0x6F91)
        #expect(E2ECRC.compute([0x3E, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09]) == 0x2F01)
        #expect(E2ECRC.compute([UInt8(ascii: "A")]) == 0x5C0A)
    }

    @Test func nordicFull() throws {
        let record = try #require(try decoded(.cgmMeasurement, Self.full).cgm?.records.first)
        #expect(record.glucoseConcentration.description == "12.34" && record.timeOffsetMinutes == 5)
        #expect(record.statusOctet == 0x02 && record.calTempOctet == 0x14 && record.warningOctet == 0xFF)
        #expect(record.sensorStatusAnnunciation == 0xFF_1402)
        #expect(record.trend?.description == "0.2" && record.quality?.description == "99.7")
        #expect(record.e2eCRC == 0x3F8E && record.skippedBytes == 0)
        let observations = try decoded(.cgmMeasurement, Self.full).observations
        #expect(observations.map(\.metric) == [.cgmGlucose, .cgmTrend, .cgmQuality])
        #expect(observations.allSatisfy { $0.time == .minutesSinceSessionStart(5) && $0.deviceSuppliedTime })
    }

    @Test func nordicSmallAndDouble() throws {
        let small = try #require(try decoded(.cgmMeasurement, Self.small).cgm)
        #expect(small.records.count == 1 && small.records[0].glucoseConcentration.decimal == dec(12, 1) && small.records[0].e2eCRC == nil)
        let double = try #require(try decoded(.cgmMeasurement, Self.double).cgm)
        #expect(double.records.map(\.timeOffsetMinutes) == [5, 6])
        #expect(double.observations.count == 2)
    }

    @Test func badCRCIsRefused() {
        let error = refusal(.cgmMeasurement, Self.crcError)
        #expect(error == HealthDecodingError(.crcMismatch, characteristic: "", field: "record 0.e2e-crc", offset: 6))
        // With the CGM Feature saying "no E2E-CRC", the same two bytes are an unknown extension, skipped.
        let skipped = try? HealthDecoder.decode(characteristic: .cgmMeasurement, bytes: Self.crcError, context: .init(cgmCRC: .absent))
        #expect(skipped?.cgm?.records.first?.skippedBytes == 2)
        // With the feature saying "E2E-CRC", a record without room for one is refused.
        #expect(throws: HealthDecodingError(.truncated, characteristic: "", field: "record 0.e2e-crc", offset: 6)) {
            try HealthDecoder.decode(characteristic: .cgmMeasurement, bytes: Self.small, context: .init(cgmCRC: .present))
        }
    }

    @Test func everyTruncationIsRefused() {
        expectEveryTruncationRefused(.cgmMeasurement, Self.full)
        expectEveryTruncationRefused(.cgmMeasurement, Self.small)
        // A value that ends exactly after the first record is one complete record.
        expectEveryTruncationRefused(.cgmMeasurement, Self.double, validPrefix: { $0 == 6 })
    }

    @Test func sizeFieldBoundsTheRecord() {
        #expect(refusal(.cgmMeasurement, [5, 0x00, 0x0C, 0x10, 0x06])?.code == .invalidField)
        // Flags announce a trend the size leaves no room for.
        #expect(refusal(.cgmMeasurement, [6, 0x01, 0x0C, 0x10, 0x06, 0x00]) == HealthDecodingError(.truncated, characteristic: "", field: "record 0.trend", offset: 6))
        // A size beyond the value.
        #expect(refusal(.cgmMeasurement, [7, 0x00, 0x0C, 0x10, 0x06, 0x00])?.code == .truncated)
    }

    /// Every flags byte of one record, built by hand, with a correct CRC appended (computed by the CRC whose check
    /// values are pinned above) and with none.
    @Test func everyFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var body: [UInt8] = [flags, 0x78, 0x00] + le16(1440)  // 120 mg/dL at minute 1440
            if flags & 0x80 != 0 { body += [0x01] }
            if flags & 0x40 != 0 { body += [0x02] }
            if flags & 0x20 != 0 { body += [0x04] }
            if flags & 0x01 != 0 { body += [0xFB, 0x0F] }  // −5 (exponent 0, mantissa 0xFFB)
            if flags & 0x02 != 0 { body += [0x5F, 0x00] }  // 95 %
            let plain = [UInt8(body.count + 1)] + body
            var withCRC = [UInt8(body.count + 3)] + body
            withCRC += le16(E2ECRC.compute(withCRC))
            for (bytes, crc) in [(plain, CGMCRCPresence.absent), (withCRC, .present), (withCRC, .inferredFromSize)] {
                let value = try HealthDecoder.decode(characteristic: .cgmMeasurement, bytes: bytes, context: .init(cgmCRC: crc))
                let record = try #require(value.cgm?.records.first)
                #expect(record.glucoseConcentration.decimal == dec(120) && record.timeOffsetMinutes == 1440)
                #expect(record.statusOctet == (flags & 0x80 != 0 ? 1 : nil))
                #expect(record.calTempOctet == (flags & 0x40 != 0 ? 2 : nil))
                #expect(record.warningOctet == (flags & 0x20 != 0 ? 4 : nil))
                #expect(record.trend?.decimal == (flags & 0x01 != 0 ? dec(-5) : nil))
                #expect(record.quality?.decimal == (flags & 0x02 != 0 ? dec(95) : nil))
                #expect((record.e2eCRC != nil) == (crc != .absent))
                #expect(record.skippedBytes == 0)
            }
            // Any single flipped bit in a CRC-protected record is caught.
            for index in withCRC.indices.dropFirst() {
                var corrupted = withCRC
                corrupted[index] ^= 0x10
                #expect(throws: HealthDecodingError.self) {
                    try HealthDecoder.decode(characteristic: .cgmMeasurement, bytes: corrupted, context: .init(cgmCRC: .present))
                }
            }
            expectEveryTruncationRefused(.cgmMeasurement, plain)
            expectEveryTruncationRefused(.cgmMeasurement, withCRC)
        }
    }
}
