import Testing
@testable import HealthProfiles

/// Heart Rate Measurement 0x2A37 (HRS v1.0 §3.1).
@Suite struct HeartRateMeasurementTests {
    /// Golden vectors: NordicSemiconductor/Android-BLE-Common-Library (commit c078e257), ble-common/src/test/java/
    /// no/nordicsemi/android/ble/common/callback/hr/HeartRateMeasurementDataCallbackTest.java.
    static let nordicSimple: [UInt8] = [0x00, 85]
    static let nordicNoContact: [UInt8] = [0x04, 0xFF]
    static let nordicUInt8: [UInt8] = [0b11110, 85, 50, 0, 33, 0]
    static let nordicUInt16: [UInt8] = [0b11111, 1, 1, 50, 1, 1, 0, 2, 1, 0xFF, 0xFF]

    @Test func nordicGoldenVectors() throws {
        let simple = try #require(try decoded(.heartRateMeasurement, Self.nordicSimple).heartRate)
        #expect(simple.heartRate == 85 && simple.sensorContact == .notSupported && simple.energyExpended == nil && simple.rrIntervals.isEmpty)

        let noContact = try #require(try decoded(.heartRateMeasurement, Self.nordicNoContact).heartRate)
        #expect(noContact.heartRate == 255 && noContact.sensorContact == .notDetected)

        let uint8 = try #require(try decoded(.heartRateMeasurement, Self.nordicUInt8).heartRate)
        #expect(uint8.heartRate == 85 && uint8.sensorContact == .detected && uint8.energyExpended == 50 && uint8.rrIntervals == [33])

        let uint16 = try #require(try decoded(.heartRateMeasurement, Self.nordicUInt16).heartRate)
        #expect(uint16.heartRate == 257 && uint16.valueIsUInt16 && uint16.energyExpended == 306)
        #expect(uint16.rrIntervals == [1, 258, 65535])
        // 1/1024 s exactly: 258/1024 = 0.251953125 s.
        #expect(uint16.rrIntervalSeconds == [dec(9_765_625, -10), dec(251_953_125, -9), dec(639_990_234_375, -10)])
    }

    /// Nordic's onInvalidDataReceived: flags say uint16 value, contact detected and RR intervals, but only the value follows.
    @Test func nordicInvalidVectorIsRefusedNamingTheField() {
        let error = refusal(.heartRateMeasurement, [0b10111, 1, 1])
        #expect(error == HealthDecodingError(.truncated, characteristic: "", field: "rr-interval", offset: 3))
    }

    @Test func everyTruncationIsRefusedOrDropsWholeIntervals() {
        expectEveryTruncationRefused(.heartRateMeasurement, Self.nordicSimple)
        expectEveryTruncationRefused(.heartRateMeasurement, Self.nordicNoContact)
        expectEveryTruncationRefused(.heartRateMeasurement, Self.nordicUInt8)
        // RR intervals fill the rest of the value: 7 and 9 bytes are complete values with one and two intervals.
        expectEveryTruncationRefused(.heartRateMeasurement, Self.nordicUInt16, validPrefix: { $0 == 7 || $0 == 9 })
    }

    @Test func oddByteAfterRRIntervalsIsRefused() {
        let error = refusal(.heartRateMeasurement, [0x10, 60, 0x00, 0x04, 0x07])
        #expect(error?.code == .invalidField)
        #expect(error?.field == "rr-interval")
        #expect(error?.offset == 4)
    }

    /// Every flags byte (reserved bits 5-7 included: ignored), with the layout built by hand from HRS §3.1.
    @Test func everyFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags]
            bytes += flags & 0x01 != 0 ? le16(0x0123) : [0x48]
            if flags & 0x08 != 0 { bytes += le16(0x0456) }
            if flags & 0x10 != 0 { bytes += le16(0x0400) + le16(0x0200) }
            let value = try #require(try decoded(.heartRateMeasurement, bytes).heartRate)
            #expect(value.heartRate == (flags & 0x01 != 0 ? 0x0123 : 0x48))
            let contact: HeartRateMeasurement.SensorContact = switch (flags >> 1) & 3 {
            case 2: .notDetected
            case 3: .detected
            default: .notSupported
            }
            #expect(value.sensorContact == contact)
            #expect(value.energyExpended == (flags & 0x08 != 0 ? 0x0456 : nil))
            #expect(value.rrIntervals == (flags & 0x10 != 0 ? [1024, 512] : []))
            #expect(value.trailingBytes == 0)
            let metrics = value.observations.map(\.metric)
            #expect(metrics.first == .heartRate)
            #expect(metrics.filter { $0 == .rrInterval }.count == (flags & 0x10 != 0 ? 2 : 0))
            if flags & 0x10 != 0 {
                expectEveryTruncationRefused(.heartRateMeasurement, bytes, validPrefix: { $0 == bytes.count - 2 })
            } else {
                expectEveryTruncationRefused(.heartRateMeasurement, bytes)
            }
        }
    }

    @Test func observationsInTheirUnits() throws {
        let value = try decoded(.heartRateMeasurement, Self.nordicUInt8)
        let observations = value.observations
        #expect(observations.map(\.metric) == [.heartRate, .energyExpended, .rrInterval])
        #expect(observations[0].reportedUnit == .perMinute && observations[0].value == .number(dec(85)))
        #expect(observations[0].mdcCode == 147_842)
        #expect(observations[1].reportedUnit == .kilojoule)
        #expect(observations[2].value == .number(dec(322_265_625, -10)))  // 33/1024 s
        #expect(observations.allSatisfy { !$0.deviceSuppliedTime && !$0.isIntermediate })
    }
}
