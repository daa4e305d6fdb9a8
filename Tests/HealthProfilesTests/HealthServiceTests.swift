import Testing
@testable import HealthProfiles

@Suite struct HealthServiceTests {
    /// Bluetooth SIG Assigned Numbers §3.4 (GATT services) and §3.8 (characteristics), written out here by hand.
    @Test func assignedNumbersMatchTheSIGList() {
        let services: [(HealthService, UInt16)] = [
            (.heartRate, 0x180D), (.bloodPressure, 0x1810), (.healthThermometer, 0x1809), (.weightScale, 0x181D),
            (.bodyComposition, 0x181B), (.glucose, 0x1808), (.pulseOximeter, 0x1822), (.continuousGlucoseMonitoring, 0x181F),
        ]
        #expect(services.count == HealthService.allCases.count)
        for (service, number) in services { #expect(service.rawValue == number) }
        #expect(HealthService.recordAccessControlPoint == 0x2A52)
    }

    /// The measurements that must be indicated (BLS §3.1, HTS §3.1, WSS §3.2, BCS §3.2, PLXS §3.2): a gateway that
    /// asked for notifications would get nothing from these (vital-android PR#24).
    @Test func measurementsThatAreIndicated() {
        let indicated = Set(HealthService.allCases.flatMap(\.subscribed).filter { $0.delivery == .indicate }.map(\.uuid))
        #expect(indicated == [0x2A35, 0x2A1C, 0x2A9D, 0x2A9C, 0x2A5E])
        let intermediate = Set(HealthService.allCases.flatMap(\.subscribed).filter(\.intermediate).map(\.uuid))
        #expect(intermediate == [0x2A36, 0x2A1E])
        #expect(HealthService.allCases.filter(\.storesRecords) == [.glucose, .pulseOximeter, .continuousGlucoseMonitoring])
    }

    @Test func serviceOfAnAssignedNumber() {
        #expect(HealthService(assignedNumber: 0x1808) == .glucose)
        #expect(HealthService(assignedNumber: 0x180A) == nil)
    }
}
