import BlueZSimulator
import DBus
import Foundation
import Synchronization
import Testing
import TetherTestSupport

/// Where tether-sim must be as strict as bluetoothd (issue 12): a call in flight when bluetoothd restarts is never
/// answered by the new one, and a connection renames a device to its GAP name.
@Suite(.serialized)
struct BluetoothdStrictnessTests {
    static func slowConnects(gapName: String? = nil) -> SimulatorConfiguration {
        var configuration = SimulatorConfiguration.generated(count: 1, seed: 7)
        configuration.link.connectMilliseconds = 6_000  // the restart must land while Connect is in flight, also on a loaded machine
        configuration.devices[0].gapName = gapName
        return configuration
    }

    /// Starts Connect on the first device and returns once the call is at the simulator (its counter moved).
    static func connectInFlight(_ harness: SimulatorHarness) async throws -> Task<[DBusValue], any Error> {
        try await harness.discover()
        let connect = Task { try await harness.bluez(SimulatorHarness.firstDevice, "org.bluez.Device1", "Connect") }
        try await waitUntil("the Connect at the simulator", seconds: 30) {
            let statistics = try await harness.control("GetStatistics", [.objectPath(SimulatorHarness.firstDevice)])
            return statistics.first?.variantDictionaryValue?["connect_calls"]?.unwrappingVariants == .uint32(1)
        }
        return connect
    }

    @Test func aConnectInFlightAcrossARestartGetsNoReplyAndNoLink() async throws {
        try await SimulatorHarness.with(Self.slowConnects()) { harness in
            let connect = try await Self.connectInFlight(harness)
            _ = try await harness.control(
                "InjectFault", [.string("bluetoothd-restart"), .variantDictionary(["downtime_ms": .uint32(200)])])
            let error = await #expect(throws: DBusError.self) { try await connect.value }
            #expect(error?.code == .noReply, "\(String(describing: error))")
            #expect(error?.message == "Message recipient disconnected from message bus without replying")

            // The new bluetoothd knows nothing of that call: no link, now or when its Connect would have ended.
            try await waitUntil("org.bluez back", seconds: 30) { try await harness.client.nameOwner(of: "org.bluez") != nil }
            let statistics = try await harness.control("GetStatistics", [.objectPath(SimulatorHarness.firstDevice)])
            #expect(statistics.first?.variantDictionaryValue?["connected"]?.unwrappingVariants == .bool(false))

            // The device itself is fine: found again, it connects.
            try await harness.discover()
            try await harness.connect()
        }
    }

    /// RemoveDevice while a Connect waits for its link (the gateway's InProgress clearing can do this): the Connect
    /// fails and no link comes up on the removed object, so the device advertises again and is found again. The
    /// simulator once brought the link up anyway: the device stayed "connected" with no object and never came back.
    @Test func removeDeviceAbortsAConnectInFlight() async throws {
        try await SimulatorHarness.with(Self.slowConnects()) { harness in
            let connect = try await Self.connectInFlight(harness)
            _ = try await harness.client.call(
                destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1", member: "RemoveDevice",
                arguments: [.objectPath(SimulatorHarness.firstDevice)])
            await #expect(throws: DBusError.self) { try await connect.value }
            let statistics = try await harness.control("GetStatistics", [.objectPath(SimulatorHarness.firstDevice)])
            #expect(statistics.first?.variantDictionaryValue?["connected"]?.unwrappingVariants == .bool(false))
            // Found again by discovery, it connects.
            try await harness.discover()
            try await harness.connect()
        }
    }

    @Test func lateNoReplyHoldsTheDroppedCallsAnswerUntilTheNameIsBack() async throws {
        try await SimulatorHarness.with(Self.slowConnects()) { harness in
            let owner = try #require(try await harness.client.nameOwner(of: "org.bluez"))
            let connect = try await Self.connectInFlight(harness)
            _ = try await harness.control(
                "InjectFault",
                [.string("bluetoothd-restart"),
                 .variantDictionary(["downtime_ms": .uint32(100), "late_no_reply_ms": .uint32(300)])])
            let error = await #expect(throws: DBusError.self) { try await connect.value }
            #expect(error?.code == .noReply)
            // Held until after the new bluetoothd took the name: the name is owned when the answer is in.
            #expect(try await harness.client.nameOwner(of: "org.bluez") == owner)
        }
    }

    @Test func connectingRenamesTheDeviceToItsGAPName() async throws {
        var configuration = SimulatorConfiguration.generated(count: 1, seed: 7)
        configuration.devices[0].gapName = "Tether GAP 0001"
        try await SimulatorHarness.with(configuration) { harness in
            let device = SimulatorHarness.firstDevice
            try await harness.discover()
            #expect(try await harness.property(device, "org.bluez.Device1", "Name") == .string("Tether-0001"))
            let recorder = try await harness.record()
            try await harness.connect()
            let resolved = try await recorder.waitFor("ServicesResolved=true") {
                $0.changes("ServicesResolved", to: .bool(true), at: device)
            }
            let renamed = try await recorder.waitFor("Name and Alias changed") {
                $0.changes("Name", to: .string("Tether GAP 0001"), at: device)
                    && $0.changes("Alias", to: .string("Tether GAP 0001"), at: device)
            }
            #expect(renamed > resolved, "bluetoothd reads the GAP name once services are resolved")
            #expect(try await harness.property(device, "org.bluez.Device1", "Name") == .string("Tether GAP 0001"))
            #expect(try await harness.property(device, "org.bluez.Device1", "Alias") == .string("Tether GAP 0001"))

            // The name stays after the link goes (bluetoothd keeps it with the device).
            _ = try await harness.bluez(device, "org.bluez.Device1", "Disconnect")
            #expect(try await harness.property(device, "org.bluez.Device1", "Name") == .string("Tether GAP 0001"))
        }
    }

    @Test func gapNameDecodes() throws {
        let json = #"{"devices": [{"address": "C0:00:00:00:00:09", "gapName": "Meter"}, {"address": "C0:00:00:00:00:0A"}]}"#
        let configuration = try JSONDecoder().decode(SimulatorConfiguration.self, from: Data(json.utf8))
        #expect(configuration.devices.map(\.gapName) == ["Meter", nil])
    }
}
