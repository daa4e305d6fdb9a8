import Testing
@testable import HealthProfiles

@Suite struct HealthDecoderTests {
    @Test func uuidForms() {
        for text in ["2A35", "2a35", "0x2A35", "0X2a35", "00002A35-0000-1000-8000-00805F9B34FB", "00002a35-0000-1000-8000-00805f9b34fb"] {
            #expect(HealthCharacteristic(uuidString: text) == .bloodPressureMeasurement, "\(text)")
        }
        for text in ["2A3", "2A350", "0x", "", "zz35", "00002a35-0000-1000-8000-00805f9b34fc", "12342a35-0000-1000-8000-00805f9b34fb", "2A52"] {
            #expect(HealthCharacteristic(uuidString: text) == nil, "\(text)")
        }
        for characteristic in HealthCharacteristic.allCases {
            #expect(HealthCharacteristic(uuidString: characteristic.uuid) == characteristic)
            #expect(HealthCharacteristic(uuidString: characteristic.shortUUID) == characteristic)
        }
        #expect(HealthCharacteristic.cgmMeasurement.uuid == "00002aa7-0000-1000-8000-00805f9b34fb")
    }

    @Test func intermediatesAreMarkedAndOnlyThey() throws {
        #expect(HealthCharacteristic.allCases.filter(\.isIntermediate) == [.intermediateCuffPressure, .intermediateTemperature])
    }

    @Test func emptyValueIsRefusedForEveryCharacteristic() {
        for characteristic in HealthCharacteristic.allCases {
            let error = refusal(characteristic, [])
            #expect(error?.code == .truncated && error?.offset == 0, "\(characteristic)")
        }
    }

    @Test func parserVersionIsPinned() {
        // Changing what bytes decode to must bump it (the store re-decodes rows of older versions).
        #expect(HealthDecoder.parserVersion == 1)
    }
}
