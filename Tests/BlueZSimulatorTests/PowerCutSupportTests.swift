@testable import BlueZSimulator
import DBus
import Foundation
import LinkProtocol
import Testing

/// What the power-cut rig (scripts/durability/power-cut.sh) needs from the simulator, which dies with every cut: a
/// device bonded before the start, a boot counter that carries on from earlier boots, and a record of released
/// events that lives outside the simulator.
@Suite struct PowerCutSupportTests {
    @Test func aBondedDeviceIsOnTheBusAtStartWithItsConfiguredBootCounter() async throws {
        var bonded = DeviceConfiguration(address: "C0:54:45:00:00:01")
        bonded.bonded = true
        bonded.bootCounter = 321
        let stranger = DeviceConfiguration(address: "C0:54:45:00:00:02")
        try await SimulatorHarness.with(SimulatorConfiguration(devices: [bonded, stranger], seed: 1)) { harness in
            // No discovery has run: only what bluetoothd loads from storage is on the bus.
            let objects = try await harness.managedObjects()
            let device = objects[SimulatorHarness.firstDevice.rawValue]?["org.bluez.Device1"]
            #expect(device?["Paired"] == .bool(true))
            #expect(device?["Bonded"] == .bool(true))
            #expect(device?["Trusted"] == .bool(true))
            #expect(objects["/org/bluez/hci0/dev_C0_54_45_00_00_02"] == nil, "an unbonded device appeared without discovery")
            #expect(await harness.simulator.devices[0].firmware.bootCounter == 321)
            #expect(await harness.simulator.devices[1].firmware.bootCounter == 1)
        }
    }

    @Test func releasedEventsAreAppendedOneLineEach() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("released-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Lines from an earlier simulator (an earlier boot of the rig's VM) stay: the log is appended to.
        try "C0:54:45:00:00:09 TS00000009 1 7\n".write(toFile: path, atomically: false, encoding: .utf8)
        let log = try ReleasedEventLog(path: path)
        let event = { (boot: UInt16, sequence: UInt32) in
            HitEvent(eventSequence: sequence, bootCounter: boot, ticks: 0, durationMilliseconds: 10, intensity: 50)
        }
        log.append([event(65, 0), event(65, 1)], address: "C0:54:45:00:00:01", serial: "TS00000001")
        log.append([], address: "C0:54:45:00:00:02", serial: "TS00000002")
        log.append([event(129, 70000)], address: "C0:54:45:00:00:02", serial: "TS00000002")
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines == [
            "C0:54:45:00:00:09 TS00000009 1 7",
            "C0:54:45:00:00:01 TS00000001 65 0",
            "C0:54:45:00:00:01 TS00000001 65 1",
            "C0:54:45:00:00:02 TS00000002 129 70000",
            "",
        ])
    }

    @Test func anUnwritableLogIsRefusedAtStart() {
        #expect(throws: (any Error).self) { try ReleasedEventLog(path: "/nonexistent-directory/released.log") }
    }
}
