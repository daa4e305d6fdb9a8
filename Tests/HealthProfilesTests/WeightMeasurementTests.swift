import Testing
@testable import HealthProfiles

/// Weight Measurement 0x2A9D (WSS v1.0 §3.2).
@Suite struct WeightMeasurementTests {
    /// Golden vectors: RonanB96/bluetooth-sig-python (commit 1eb9973d), tests/gatt/characteristics/
    /// test_weight_measurement.py, `valid_test_data` tests 1-6. That project reads flags bit 3 as "BMI present" and
    /// bit 4 as "height present"; WSS §3.2.1.1 has bit 3 = "BMI and Height present" (both) and bit 4 reserved. Its
    /// tests 1-3 and 6 decode the same under the specification; 4 (BMI without height) is refused and 5 (bit 4
    /// only) is a weight with two ignored trailing bytes.
    static let basic: [UInt8] = [0x00, 0xB0, 0x36]
    static let imperial: [UInt8] = [0x01, 0x54, 0x3D]
    static let withTime: [UInt8] = [0x02, 0xB0, 0x36, 0xE7, 0x07, 0x0C, 0x19, 0x0E, 0x1E, 0x2D]
    static let bmiWithoutHeight: [UInt8] = [0x0C, 0xB0, 0x36, 0x05, 0xF5, 0x00]
    static let reservedBit4: [UInt8] = [0x10, 0xB0, 0x36, 0xD6, 0x06]
    static let fullImperial: [UInt8] = [0x1F, 0x54, 0x3D, 0xE7, 0x07, 0x0C, 0x19, 0x0E, 0x1E, 0x2D, 0x03, 0xF5, 0x00, 0xA8, 0x02]

    @Test func goldenVectors() throws {
        let basic = try #require(try decoded(.weightMeasurement, Self.basic).weight)
        #expect(basic.weight == .number(dec(70_000, -3)) && basic.weightUnit == .kilogram)  // 14000 × 0.005 kg
        let imperial = try #require(try decoded(.weightMeasurement, Self.imperial).weight)
        #expect(imperial.weight == .number(dec(15_700, -2)) && imperial.weightUnit == .pound)
        #expect(imperial.observations.first?.canonicalValue == .exact(dec(7_121_400_209, -8)))  // 157 lb = 71.21400209 kg
        let withTime = try #require(try decoded(.weightMeasurement, Self.withTime).weight)
        #expect(withTime.timeStamp == DeviceDateTime(year: 2023, month: 12, day: 25, hours: 14, minutes: 30, seconds: 45))
        let full = try #require(try decoded(.weightMeasurement, Self.fullImperial).weight)
        #expect(full.userID == 3 && full.bmi == .number(dec(245, -1)) && full.height == .number(dec(680, -1)) && full.heightUnit == .inch)
        #expect(full.observations.map(\.metric) == [.bodyMass, .bodyMassIndex, .bodyHeight])
        #expect(full.observations.allSatisfy { $0.userIndex == 3 && $0.deviceSuppliedTime })
    }

    @Test func theSpecsBMIAndHeightFlag() throws {
        #expect(refusal(.weightMeasurement, Self.bmiWithoutHeight) == HealthDecodingError(.truncated, characteristic: "", field: "height", offset: 6))
        let reserved = try #require(try decoded(.weightMeasurement, Self.reservedBit4).weight)
        #expect(reserved.bmi == nil && reserved.height == nil && reserved.trailingBytes == 2)
    }

    @Test func everyTruncationIsRefused() {
        for vector in [Self.basic, Self.imperial, Self.withTime, Self.fullImperial] { expectEveryTruncationRefused(.weightMeasurement, vector) }
    }

    /// 0xFFFF is "measurement unsuccessful" (WSS §3.2.1.2): status nan, never 327.675 kg.
    @Test func unsuccessfulMeasurement() throws {
        let value = try decoded(.weightMeasurement, [0x00, 0xFF, 0xFF])
        #expect(value.observations.first?.value == MeasuredValue(status: .nan, decimal: nil))
        #expect(value.observations.first?.canonicalValue == nil)
    }

    @Test func everyFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags] + le16(14_001)
            if flags & 0x02 != 0 { bytes += dateTimeBytes(2023, 12, 25, 14, 30, 45) }
            if flags & 0x04 != 0 { bytes += [0xFF] }
            if flags & 0x08 != 0 { bytes += le16(245) + le16(1750) }
            let value = try #require(try decoded(.weightMeasurement, bytes).weight)
            let imperial = flags & 1 != 0
            #expect(value.weight == (imperial ? .number(dec(14_001, -2)) : .number(dec(70_005, -3))))
            #expect((value.timeStamp != nil) == (flags & 0x02 != 0))
            #expect(value.userID == (flags & 0x04 != 0 ? 0xFF : nil))
            #expect(value.bmi == (flags & 0x08 != 0 ? .number(dec(245, -1)) : nil))
            #expect(value.height == (flags & 0x08 != 0 ? (imperial ? .number(dec(1750, -1)) : .number(dec(1750, -3))) : nil))
            #expect(value.trailingBytes == 0)
            expectEveryTruncationRefused(.weightMeasurement, bytes)
        }
    }
}
