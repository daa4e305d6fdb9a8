import Testing
@testable import HealthProfiles

/// Temperature Measurement 0x2A1C and Intermediate Temperature 0x2A1E (HTS v1.0 §3.1, §3.3).
@Suite struct TemperatureMeasurementTests {
    /// Golden vector: NordicSemiconductor/Android-BLE-Common-Library (commit c078e257), ble-common/src/test/java/
    /// no/nordicsemi/android/ble/common/callback/ht/TemperatureMeasurementDataCallbackTest.java: 37.60 °C,
    /// 2012-12-05 11:50:27, type 4 (finger); its onInvalidDataReceived drops the type byte.
    static let nordic: [UInt8] = [0x06, 0xB0, 0x0E, 0x00, 0xFE, 0xDC, 0x07, 0x0C, 0x05, 0x0B, 0x32, 0x1B, 0x04]

    @Test func nordicGoldenVector() throws {
        let value = try #require(try decoded(.temperatureMeasurement, Self.nordic).temperature)
        #expect(value.unit == .celsius && value.temperature.description == "37.60")
        #expect(value.timeStamp == DeviceDateTime(year: 2012, month: 12, day: 5, hours: 11, minutes: 50, seconds: 27))
        #expect(value.temperatureType == 4 && value.temperatureTypeName == "finger")
        let observation = try #require(value.observations.first)
        #expect(observation.metric == .bodyTemperature && observation.canonicalValue == .exact(dec(3760, -2)))
        #expect(observation.qualifier == "finger" && !observation.isIntermediate)
    }

    @Test func nordicInvalidVectorAndEveryTruncation() {
        #expect(refusal(.temperatureMeasurement, Array(Self.nordic.dropLast()))?.field == "temperature type")
        expectEveryTruncationRefused(.temperatureMeasurement, Self.nordic)
        expectEveryTruncationRefused(.intermediateTemperature, Self.nordic)
    }

    @Test func fahrenheitAndSpecials() throws {
        // 98.6 °F: FLOAT exponent -1, mantissa 986 = 0x0003DA.
        let fahrenheit = try decoded(.temperatureMeasurement, [0x01, 0xDA, 0x03, 0x00, 0xFF])
        #expect(fahrenheit.temperature?.unit == .fahrenheit)
        #expect(fahrenheit.observations.first?.canonicalValue == .rounded(dec(37_000, -3)))
        let nan = try decoded(.temperatureMeasurement, [0x00, 0xFF, 0xFF, 0x7F, 0x00])
        #expect(nan.observations.first?.value == MeasuredValue(status: .nan, decimal: nil))
        let intermediate = try decoded(.intermediateTemperature, [0x00, 0xB0, 0x0E, 0x00, 0xFE])
        #expect(intermediate.observations.allSatisfy { $0.isIntermediate })
    }

    @Test func everyFlagCombination() throws {
        for flags in UInt8.min...UInt8.max {
            var bytes: [UInt8] = [flags, 0x71, 0x01, 0x00, 0xFF]  // 36.9
            if flags & 0x02 != 0 { bytes += dateTimeBytes(2025, 1, 31, 23, 59, 59) }
            if flags & 0x04 != 0 { bytes += [6] }
            let value = try #require(try decoded(.temperatureMeasurement, bytes).temperature)
            #expect(value.unit == (flags & 1 == 0 ? .celsius : .fahrenheit))
            #expect(value.temperature.decimal == dec(369, -1))
            #expect((value.timeStamp != nil) == (flags & 0x02 != 0))
            #expect(value.temperatureType == (flags & 0x04 != 0 ? 6 : nil))
            #expect(value.trailingBytes == 0)
            expectEveryTruncationRefused(.temperatureMeasurement, bytes)
        }
    }
}
