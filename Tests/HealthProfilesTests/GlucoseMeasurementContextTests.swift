import Testing
@testable import HealthProfiles

/// Glucose Measurement Context 0x2A34 (GLS v1.0.1).
@Suite struct GlucoseMeasurementContextTests {
    /// After NordicSemiconductor/Android-BLE-Common-Library (commit c078e257), ble-common/src/test/java/no/
    /// nordicsemi/android/ble/common/callback/glucose/GlucoseMeasurementContextDataCallbackTest.java,
    /// `_full`: flags 0xFF, sequence 0, extended flags 0xB3, carbohydrate 3 (dinner) 100.0, meal 4 (casual),
    /// tester-health 0x12, exercise 60 s at 50 %, medication 4 (long acting) 123.45 (litres: flags bit 5), HbA1c
    /// 34.5. Nordic writes the SFLOATs from Java floats; here they are SFLOAT-encoded by hand (100 = 0x0064,
    /// 123.4 = 0xF4D2 as the nearest SFLOAT, 34.5 = 0xF159). `_empty`: flags 0, sequence 1, 14 zero bytes after.
    static let full: [UInt8] = [0xFF, 0x00, 0x00, 0xB3, 0x03, 0x64, 0x00, 0x04, 0x12, 0x3C, 0x00, 0x32, 0x04, 0xD2, 0xF4, 0x59, 0xF1]
    static let empty: [UInt8] = [0x00, 0x01, 0x00] + [UInt8](repeating: 0, count: 14)

    @Test func nordicVectors() throws {
        let full = try #require(try decoded(.glucoseMeasurementContext, Self.full).glucoseContext)
        #expect(full.sequenceNumber == 0 && full.extendedFlags == 0xB3)
        #expect(full.carbohydrateID == 3 && full.carbohydrate?.decimal == dec(100))
        #expect(full.meal == 4 && full.tester == 2 && full.health == 1)
        #expect(full.exerciseDurationSeconds == 60 && full.exerciseIntensityPercent == 50)
        #expect(full.medicationID == 4 && full.medication?.description == "123.4" && full.medicationUnit == .litre)
        #expect(full.hbA1c?.description == "34.5")
        #expect(full.observations.map(\.metric) == [.carbohydrateIntake, .exerciseDuration, .exerciseIntensity, .medication, .hbA1c])
        #expect(full.observations.allSatisfy { $0.sequenceNumber == 0 && !$0.deviceSuppliedTime })
        #expect(full.observations[0].qualifier == "dinner" && full.observations[3].qualifier == "long acting insulin")

        let empty = try #require(try decoded(.glucoseMeasurementContext, Self.empty).glucoseContext)
        #expect(empty.sequenceNumber == 1 && empty.observations.isEmpty && empty.trailingBytes == 14)
    }

    /// Nordic's onInvalidDataReceived: flags 0xFF in a 5-byte value.
    @Test func nordicInvalidAndEveryTruncation() {
        #expect(refusal(.glucoseMeasurementContext, [0xFF, 0x00, 0x00, 0xB3, 0x03])?.field == "carbohydrate")
        expectEveryTruncationRefused(.glucoseMeasurementContext, Self.full)
    }

    @Test func everyFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags] + le16(0x8000)
            if flags & 0x80 != 0 { bytes += [0x00] }
            if flags & 0x01 != 0 { bytes += [0x01, 0x32, 0xD0] }  // breakfast, 0.050 kg
            if flags & 0x02 != 0 { bytes += [0x03] }
            if flags & 0x04 != 0 { bytes += [0xF1] }
            if flags & 0x08 != 0 { bytes += le16(0xFFFF) + [0x64] }
            if flags & 0x10 != 0 { bytes += [0x01, 0x05, 0xA0] }  // rapid acting, 5e-6 (kg: 5 mg; L: 5 µL)
            if flags & 0x40 != 0 { bytes += [0x3C, 0xF0] }  // 6.0 %
            let value = try #require(try decoded(.glucoseMeasurementContext, bytes).glucoseContext)
            #expect(value.sequenceNumber == 0x8000)
            #expect(value.extendedFlags == (flags & 0x80 != 0 ? 0 : nil))
            #expect(value.carbohydrate?.decimal == (flags & 0x01 != 0 ? dec(50, -3) : nil))
            #expect(value.meal == (flags & 0x02 != 0 ? 3 : nil))
            #expect(value.tester == (flags & 0x04 != 0 ? 1 : nil) && value.health == (flags & 0x04 != 0 ? 15 : nil))
            #expect(value.exerciseDurationSeconds == (flags & 0x08 != 0 ? 0xFFFF : nil))
            #expect(value.medication?.decimal == (flags & 0x10 != 0 ? dec(5, -6) : nil))
            #expect(value.medicationUnit == (flags & 0x20 != 0 ? .litre : .kilogram))
            #expect(value.hbA1c?.decimal == (flags & 0x40 != 0 ? dec(60, -1) : nil))
            #expect(value.trailingBytes == 0)
            if flags & 0x08 != 0 {
                // 0xFFFF is "overrun": more than the field can hold, kept as +inf, not 65535 s.
                let duration = value.observations.first { $0.metric == .exerciseDuration }
                #expect(duration?.value.status == .positiveInfinity)
            }
            expectEveryTruncationRefused(.glucoseMeasurementContext, bytes)
        }
    }
}
