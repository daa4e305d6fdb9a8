import Testing
@testable import HealthProfiles

/// Blood Pressure Measurement 0x2A35 and Intermediate Cuff Pressure 0x2A36 (BLS v1.1.1 §3.1, §3.2).
@Suite struct BloodPressureMeasurementTests {
    /// Golden vectors: NordicSemiconductor/Android-BLE-Common-Library (commit c078e257), ble-common/src/test/java/
    /// no/nordicsemi/android/ble/common/callback/bps/BloodPressureMeasurementDataCallbackTest.java, the byte arrays
    /// its assertArrayEquals checks (`_full`, `_some`, `_minimal`).
    static let nordicFull: [UInt8] = [0x1E, 0x8A, 0x00, 0x58, 0x00, 0x78, 0x00, 0x00, 0x00, 0x04, 0x11, 0x14, 0x29, 0x3B, 0x3C, 0x00, 0x01, 0x27, 0x00]
    static let nordicSome: [UInt8] = [0x15, 0xBD, 0xF0, 0x0B, 0x00, 0x9F, 0xF0, 0x3C, 0x00, 0x12, 0x00]
    static let nordicMinimal: [UInt8] = [0x00, 0xBD, 0xF0, 0x0B, 0x00, 0x9F, 0xF0]
    /// Same source, IntermediateCuffPressureDataCallbackTest.java (`_full`, `_some`, `_minimal`).
    static let nordicCuffFull: [UInt8] = [0x1E, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x11, 0x14, 0x29, 0x3B, 0x3C, 0x00, 0x01, 0x27, 0x00]
    static let nordicCuffSome: [UInt8] = [0x15, 0x6F, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x12, 0x00]
    static let nordicCuffMinimal: [UInt8] = [0x00, 0xD7, 0xF0, 0x00, 0x00, 0x00, 0x00]

    @Test func nordicFull() throws {
        let value = try #require(try decoded(.bloodPressureMeasurement, Self.nordicFull).bloodPressure)
        #expect(value.unit == .millimetreOfMercury)
        #expect(value.systolic.decimal == dec(138) && value.diastolic.decimal == dec(88) && value.meanArterialPressure.decimal == dec(120))
        #expect(value.pulseRate?.decimal == dec(60))
        #expect(value.userID == 1)
        // Year 0: the device does not know the year (GSS §3.70); the rest is April 17, 20:41:59.
        #expect(value.timeStamp == DeviceDateTime(year: 0, month: 4, day: 17, hours: 20, minutes: 41, seconds: 59))
        let status = try #require(value.status)
        #expect(status.bodyMovementDetected && status.cuffFitTooLoose && status.irregularPulseDetected)
        #expect(status.pulseRateRange == .withinRange && status.improperMeasurementPosition)
        #expect(value.trailingBytes == 0)
    }

    @Test func nordicSomeInKilopascal() throws {
        let value = try #require(try decoded(.bloodPressureMeasurement, Self.nordicSome).bloodPressure)
        #expect(value.unit == .kilopascal)
        #expect(value.systolic.description == "18.9" && value.diastolic.description == "11" && value.meanArterialPressure.description == "15.9")
        #expect(value.pulseRate?.decimal == dec(60) && value.userID == nil && value.timeStamp == nil)
        let status = try #require(value.status)
        #expect(!status.bodyMovementDetected && status.cuffFitTooLoose && status.pulseRateRange == .lessThanLowerLimit)
        let systolic = try #require(value.observations.first)
        #expect(systolic.reportedUnit == .kilopascal && systolic.canonicalUnit == .millimetreOfMercury)
        #expect(systolic.canonicalValue == .rounded(dec(141_762, -3)))
    }

    @Test func nordicMinimal() throws {
        let value = try #require(try decoded(.bloodPressureMeasurement, Self.nordicMinimal).bloodPressure)
        #expect(value.unit == .millimetreOfMercury && value.pulseRate == nil && value.status == nil && value.timeStamp == nil)
        #expect(value.observations.map(\.metric) == [.bloodPressureSystolic, .bloodPressureDiastolic, .bloodPressureMean])
    }

    @Test func nordicIntermediateCuffPressure() throws {
        let full = try #require(try decoded(.intermediateCuffPressure, Self.nordicCuffFull).bloodPressure)
        #expect(full.isIntermediate && full.systolic.decimal == dec(4) && full.userID == 1 && full.pulseRate?.decimal == dec(60))
        let some = try #require(try decoded(.intermediateCuffPressure, Self.nordicCuffSome).bloodPressure)
        #expect(some.unit == .kilopascal && some.systolic.description == "11.1")
        let minimal = try decoded(.intermediateCuffPressure, Self.nordicCuffMinimal)
        #expect(minimal.bloodPressure?.systolic.description == "21.5")
        // One cuff-pressure observation, intermediate (never stored); the unused diastolic/MAP fields give none.
        #expect(minimal.observations.map(\.metric) == [.cuffPressure])
        #expect(minimal.observations.allSatisfy { $0.isIntermediate })
        #expect(try decoded(.intermediateCuffPressure, Self.nordicCuffFull).observations.allSatisfy { $0.isIntermediate })
    }

    /// Nordic's onInvalidDataReceived_toShort and _noTimestamp: 6 bytes, and flags 0x03 with no time stamp.
    @Test func nordicInvalidVectors() {
        #expect(refusal(.bloodPressureMeasurement, [1, 2, 3, 4, 5, 6])?.field == "mean arterial pressure")
        let noTime = refusal(.bloodPressureMeasurement, [3, 2, 3, 4, 5, 6, 7])
        #expect(noTime == HealthDecodingError(.truncated, characteristic: "", field: "time stamp", offset: 7))
    }

    @Test func everyTruncationOfEveryGoldenVectorIsRefused() {
        for vector in [Self.nordicFull, Self.nordicSome, Self.nordicMinimal] { expectEveryTruncationRefused(.bloodPressureMeasurement, vector) }
        for vector in [Self.nordicCuffFull, Self.nordicCuffSome, Self.nordicCuffMinimal] { expectEveryTruncationRefused(.intermediateCuffPressure, vector) }
    }

    /// The classic bug (IOS-nRF-Toolbox #114): flags bit 0 clear is mmHg, set is kPa.
    @Test func unitFlagIsNotReadBackwards() throws {
        let mmHg = try #require(try decoded(.bloodPressureMeasurement, [0x00, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00]).bloodPressure)
        #expect(mmHg.unit == .millimetreOfMercury)
        let kPa = try #require(try decoded(.bloodPressureMeasurement, [0x01, 0xA0, 0xF0, 0x6B, 0xF0, 0x7C, 0xF0]).bloodPressure)
        #expect(kPa.unit == .kilopascal)
        #expect(kPa.observations[0].canonicalValue == .rounded(dec(120_010, -3)))  // 16.0 kPa
    }

    /// The classic bug (blood-pressure-monitor-fl #80, nRF Connect #137): a failed measurement is SFLOAT NaN in every
    /// field; it must become observations with status nan, never 2047 mmHg.
    @Test func nanIsAnObservationWithStatusNeverANumber() throws {
        let value = try decoded(.bloodPressureMeasurement, [0x04, 0xFF, 0x07, 0xFF, 0x07, 0xFF, 0x07, 0x00, 0x08])
        let observations = value.observations
        #expect(observations.count == 4)
        for observation in observations.prefix(3) {
            #expect(observation.value.status == .nan && observation.value.decimal == nil && observation.canonicalValue == nil)
        }
        #expect(observations[3].metric == .pulseRateNonInvasive && observations[3].value.status == .nres)
    }

    /// Every flags byte (reserved bits 5-7 ignored), the layout built by hand from BLS §3.1.
    @Test func everyFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags] + le16(0x0079) + le16(0x0051) + le16(0x006A)  // 121, 81, 106
            if flags & 0x02 != 0 { bytes += dateTimeBytes(2024, 11, 24, 13, 42, 7) }
            if flags & 0x04 != 0 { bytes += le16(0x0048) }
            if flags & 0x08 != 0 { bytes += [3] }
            if flags & 0x10 != 0 { bytes += le16(0x0009) }
            for characteristic in [HealthCharacteristic.bloodPressureMeasurement, .intermediateCuffPressure] {
                let value = try #require(try decoded(characteristic, bytes).bloodPressure)
                #expect(value.unit == (flags & 1 == 0 ? .millimetreOfMercury : .kilopascal))
                #expect(value.systolic.decimal == dec(121) && value.diastolic.decimal == dec(81) && value.meanArterialPressure.decimal == dec(106))
                #expect(value.timeStamp == (flags & 0x02 != 0 ? DeviceDateTime(year: 2024, month: 11, day: 24, hours: 13, minutes: 42, seconds: 7) : nil))
                #expect(value.pulseRate?.decimal == (flags & 0x04 != 0 ? dec(72) : nil))
                #expect(value.userID == (flags & 0x08 != 0 ? 3 : nil))
                #expect(value.status?.raw == (flags & 0x10 != 0 ? 9 : nil))
                #expect(value.trailingBytes == 0)
                let observations = value.observations
                #expect(observations.allSatisfy { $0.deviceSuppliedTime == (flags & 0x02 != 0) })
                #expect(observations.allSatisfy { $0.userIndex == value.userID })
                #expect(observations.allSatisfy { $0.isIntermediate == (characteristic == .intermediateCuffPressure) })
                expectEveryTruncationRefused(characteristic, bytes)
            }
        }
    }

    @Test func trailingBytesAreIgnoredAndCounted() throws {
        let value = try #require(try decoded(.bloodPressureMeasurement, Self.nordicMinimal + [0xAA, 0xBB]).bloodPressure)
        #expect(value.trailingBytes == 2)
        #expect(value.systolic.description == "18.9")
    }

    @Test func outOfRangeTimeStampNamesTheField() {
        let bytes: [UInt8] = [0x02] + Self.nordicMinimal.dropFirst() + dateTimeBytes(2024, 13, 1, 0, 0, 0)
        let error = refusal(.bloodPressureMeasurement, bytes)
        #expect(error == HealthDecodingError(.invalidField, characteristic: "", field: "time stamp.month", offset: 7))
    }
}
