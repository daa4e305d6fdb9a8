import BlueZ
import Testing

@Suite struct GattUUIDTests {
    @Test func sigNumbersWidenOntoTheBaseUUID() {
        // Core Specification Vol 3 Part B §2.5.1: 0000xxxx-0000-1000-8000-00805F9B34FB.
        #expect(GattUUID.normalized("2A35") == "00002a35-0000-1000-8000-00805f9b34fb")
        #expect(GattUUID.normalized("0x2a52") == "00002a52-0000-1000-8000-00805f9b34fb")
        #expect(GattUUID.normalized("0000180A") == "0000180a-0000-1000-8000-00805f9b34fb")
        #expect(GattUUID.normalized("54455448-0001-4C1E-8E5A-7A3D2F1B0C00") == "54455448-0001-4c1e-8e5a-7a3d2f1b0c00")
        #expect(GattUUID.assignedNumber("00002a35-0000-1000-8000-00805f9b34fb") == 0x2A35)
        #expect(GattUUID.assignedNumber("54455448-0001-4c1e-8e5a-7a3d2f1b0c00") == nil)
    }

    @Test func malformedUUIDsAreRefused() {
        for text in ["", "2A3", "2A3G", "0x", "12345", "54455448-0001-4c1e-8e5a-7a3d2f1b0c0", "54455448+0001-4c1e-8e5a-7a3d2f1b0c00",
            "5445544800014c1e8e5a7a3d2f1b0c000000", "٢A35"]
        {
            #expect(GattUUID.normalized(text) == nil, "\(text)")
        }
    }
}
