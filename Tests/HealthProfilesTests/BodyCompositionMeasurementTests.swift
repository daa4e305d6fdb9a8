import Testing
@testable import HealthProfiles

/// Body Composition Measurement 0x2A9C (BCS v1.0 §3.2).
@Suite struct BodyCompositionMeasurementTests {
    /// Golden vectors: RonanB96/bluetooth-sig-python (commit 1eb9973d), tests/gatt/characteristics/
    /// test_body_composition_measurement.py, `valid_test_data` tests 1, 2, 3, 5 and 6. (Its test 4 puts Muscle Mass
    /// before Muscle Percentage; BCS §3.2.1 orders Muscle Percentage (bit 4) first, so it is not used.)
    static let basic: [UInt8] = [0x00, 0x00, 0x32, 0x00]
    static let imperialWithTime: [UInt8] = [0x03, 0x00, 0x96, 0x00, 0xE8, 0x07, 0x06, 0x14, 0x0A, 0x1E, 0x00]
    static let userAndBasal: [UInt8] = [0x0C, 0x00, 0x78, 0x00, 0x05, 0x40, 0x06]
    static let masses: [UInt8] = [0xC0, 0x01, 0x50, 0x00, 0xE0, 0x2E, 0x10, 0x27, 0x40, 0x1F]
    static let impedanceWeightHeight: [UInt8] = [0x00, 0x0E, 0x46, 0x00, 0x40, 0x1F, 0xB0, 0x36, 0xE8, 0x03]

    @Test func goldenVectors() throws {
        #expect(try decoded(.bodyCompositionMeasurement, Self.basic).bodyComposition?.bodyFatPercentage == .number(dec(50, -1)))
        let imperial = try #require(try decoded(.bodyCompositionMeasurement, Self.imperialWithTime).bodyComposition)
        #expect(imperial.units == "imperial" && imperial.bodyFatPercentage == .number(dec(150, -1)))
        #expect(imperial.timeStamp == DeviceDateTime(year: 2024, month: 6, day: 20, hours: 10, minutes: 30, seconds: 0))
        let user = try #require(try decoded(.bodyCompositionMeasurement, Self.userAndBasal).bodyComposition)
        #expect(user.userID == 5 && user.basalMetabolism == 1600)
        let masses = try #require(try decoded(.bodyCompositionMeasurement, Self.masses).bodyComposition)
        #expect(masses.fatFreeMass == .number(dec(60_000, -3)) && masses.softLeanMass == .number(dec(50_000, -3)))
        #expect(masses.bodyWaterMass == .number(dec(40_000, -3)) && masses.massUnit == .kilogram)
        let full = try #require(try decoded(.bodyCompositionMeasurement, Self.impedanceWeightHeight).bodyComposition)
        #expect(full.impedance == .number(dec(8000, -1)) && full.weight == .number(dec(70_000, -3)) && full.height == .number(dec(1000, -3)))
        #expect(full.observations.map(\.metric) == [.bodyFatPercentage, .bodyImpedance, .bodyMass, .bodyHeight])
    }

    @Test func everyTruncationIsRefused() {
        for vector in [Self.basic, Self.imperialWithTime, Self.userAndBasal, Self.masses, Self.impedanceWeightHeight] {
            expectEveryTruncationRefused(.bodyCompositionMeasurement, vector)
        }
    }

    @Test func multiplePacketFlagAndUnsuccessful() throws {
        let part = try #require(try decoded(.bodyCompositionMeasurement, [0x00, 0x10, 0xFF, 0xFF]).bodyComposition)
        #expect(part.multiplePacketMeasurement)
        #expect(part.bodyFatPercentage == MeasuredValue(status: .nan, decimal: nil))
    }

    /// Every combination of the 13 defined flag bits, plus the reserved bits 13-15 set (ignored), built by hand in the
    /// order of BCS §3.2.1.
    @Test func everyFlagCombination() throws {
        for defined in UInt16(0)..<(1 << 13) {
            let flags = defined | (defined % 7 == 0 ? 0xE000 : 0)
            func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
            var bytes: [UInt8] = le16(flags) + le16(201)
            if has(1) { bytes += dateTimeBytes(2024, 6, 20, 10, 30, 0) }
            if has(2) { bytes += [2] }
            for (bit, raw) in [(UInt16(3), UInt16(1600)), (4, 402), (5, 3000), (6, 3001), (7, 3002), (8, 3003), (9, 5000), (10, 14_000), (11, 1750)] where has(bit) {
                bytes += le16(raw)
            }
            let value = try #require(try decoded(.bodyCompositionMeasurement, bytes).bodyComposition)
            let imperial = has(0)
            func mass(_ raw: Int64) -> MeasuredValue { imperial ? .number(dec(raw, -2)) : .number(dec(raw * 5, -3)) }
            #expect(value.bodyFatPercentage == .number(dec(201, -1)))
            #expect((value.timeStamp != nil) == has(1))
            #expect(value.userID == (has(2) ? 2 : nil))
            #expect(value.basalMetabolism == (has(3) ? 1600 : nil))
            #expect(value.musclePercentage == (has(4) ? .number(dec(402, -1)) : nil))
            #expect(value.muscleMass == (has(5) ? mass(3000) : nil))
            #expect(value.fatFreeMass == (has(6) ? mass(3001) : nil))
            #expect(value.softLeanMass == (has(7) ? mass(3002) : nil))
            #expect(value.bodyWaterMass == (has(8) ? mass(3003) : nil))
            #expect(value.impedance == (has(9) ? .number(dec(5000, -1)) : nil))
            #expect(value.weight == (has(10) ? mass(14_000) : nil))
            #expect(value.height == (has(11) ? (imperial ? .number(dec(1750, -1)) : .number(dec(1750, -3))) : nil))
            #expect(value.multiplePacketMeasurement == has(12))
            #expect(value.trailingBytes == 0)
            if defined % 61 == 0 { expectEveryTruncationRefused(.bodyCompositionMeasurement, bytes) }
        }
    }
}
