import BlueZ
import BlueZSimulator
import BlueZTestSupport
import Foundation
import Testing
@testable import TetherGateway
import TetherStore
import TetherTestSupport

@Suite("Peripheral kinds end to end: classified from the services tether-sim offers, recorded, unsupported let go")
struct PeripheralKindTests {
    @Test(.timeLimit(.minutes(2)))
    func aTetherDeviceIsIdentifiedAndAnUnsupportedOneIsLetGo() async throws {
        var simulator = GatewayHarness.configuration(devices: 2)
        simulator.devices[1].tetherService = false
        try await GatewayHarness.with(simulator: simulator) { harness in
            let (tether, other) = (GatewayHarness.address(1), GatewayHarness.address(2))
            _ = try await harness.gateway.pair(address: tether, delegate: RejectingDelegate())
            _ = try await harness.gateway.pair(address: other, delegate: RejectingDelegate())
            try await waitUntil("the unsupported device is reported and its Device Information read") {
                let peripheral = try? harness.storage.peripherals.peripheral(identityAddress: other)
                return await harness.gateway.device(other)?.lastError?.contains("unsupported device") == true
                    && peripheral?.unsupportedServices != nil && peripheral?.deviceInformation.modelNumber != nil
            }
            try await waitUntil("the Tether device is linked, named and its Device Information read") {
                let peripheral = try? harness.storage.peripherals.peripheral(identityAddress: tether)
                return await harness.gateway.device(tether)?.serial == GatewayHarness.serial(1)
                    && peripheral?.linkDeviceId != nil && peripheral?.deviceInformation.modelNumber != nil
            }

            let identified = try #require(try harness.storage.peripherals.peripheral(identityAddress: tether))
            #expect(identified.kinds == [.deviceInformation, .tetherLink])
            #expect(identified.unsupportedServices == nil)
            // What tether-sim's Device Information Service says (BlueZSimulator's GATT layout).
            #expect(identified.deviceInformation.manufacturerName == "Tether Labs")
            #expect(identified.deviceInformation.modelNumber == "Tether")
            #expect(identified.deviceInformation.serialNumber == GatewayHarness.serial(1))
            #expect(identified.deviceInformation.firmwareRevision?.isEmpty == false)
            let device = try #require(try harness.storage.registry.device(serial: GatewayHarness.serial(1)))
            #expect(identified.linkDeviceId == device.id)

            let unsupported = try #require(try harness.storage.peripherals.peripheral(identityAddress: other))
            #expect(unsupported.kinds == [.deviceInformation])
            #expect(unsupported.linkDeviceId == nil)
            #expect(unsupported.unsupportedServices == [
                "00001803-0000-1000-8000-00805f9b34fb", "0000180a-0000-1000-8000-00805f9b34fb",
            ])
            #expect(unsupported.deviceInformation.manufacturerName == "Tether Labs")

            // Not reconnected forever: once let go, the supervisor stops connecting it. A barrier instead of a sleep:
            // the Tether device's next events are stored (the gateway kept working) and the unsupported device's
            // Connect count has not moved meanwhile.
            let connectsAfterVerdict = try await harness.simulated.statistics(other)["connect_calls"]?.uint32Value
            try await waitUntil("the unsupported device is disconnected") {
                (try? await harness.simulated.statistics(other)["connected"]) == .bool(false)
            }
            let before = try harness.storedEvents(serial: GatewayHarness.serial(1))
            _ = try await harness.simulated.recordHits(tether, 3)
            try await waitUntil("three more events stored") {
                (try? harness.storedEvents(serial: GatewayHarness.serial(1))) ?? 0 >= before + 3
            }
            #expect(try await harness.simulated.statistics(other)["connect_calls"]?.uint32Value == connectsAfterVerdict)
            #expect(await harness.gateway.device(other)?.paired == false)
        }
    }
}
