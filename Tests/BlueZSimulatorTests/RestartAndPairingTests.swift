import BlueZSimulator
import DBus
import Foundation
import Synchronization
import Testing

@Suite(.serialized)
struct RestartAndPairingTests {
    @Test func bluetoothdRestartReleasesAndRetakesTheName() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            let owner = try #require(try await harness.client.nameOwner(of: "org.bluez"))
            let changes = try await harness.client.nameOwnerChanges(of: "org.bluez")
            _ = try await harness.control(
                "InjectFault", [.string("bluetoothd-restart"), .variantDictionary(["downtime_ms": .uint32(200)])])
            var seen: [DBusNameOwnerChange] = []
            for await change in changes {
                seen.append(change)
                if change.newOwner != nil { break }
            }
            #expect(seen == [
                DBusNameOwnerChange(name: "org.bluez", oldOwner: owner, newOwner: nil),
                DBusNameOwnerChange(name: "org.bluez", oldOwner: nil, newOwner: owner),
            ])
            let objects = try await harness.managedObjects()
            #expect(objects["/org/bluez/hci0"]?["org.bluez.Adapter1"] != nil)
            // Unbonded devices are forgotten until they are discovered again.
            #expect(objects[SimulatorHarness.firstDevice.rawValue] == nil)
            try await harness.discover()
            try await harness.connect()
        }
    }

    @Test func passkeyPairingAsksTheAgent() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover(SimulatorHarness.passkeyDevice)
            let requests = Mutex<[String]>([])
            let answer = Mutex<UInt32>(999_999)
            let agentPath: DBusObjectPath = "/test/agent"
            try await harness.client.objectServer.export(
                [
                    DBusInterface(
                        name: "org.bluez.Agent1",
                        methods: [
                            DBusMethod(
                                "RequestPasskey", inputs: [DBusArgument("device", "o")],
                                outputs: [DBusArgument("passkey", "u")]
                            ) { call in
                                requests.withLock { $0.append(call.arguments[0].objectPathValue?.rawValue ?? "") }
                                return [.uint32(answer.withLock { $0 })]
                            }
                        ])
                ], at: agentPath)
            _ = try await harness.bluez(
                "/org/bluez", "org.bluez.AgentManager1", "RegisterAgent",
                [.objectPath(agentPath), .string("KeyboardOnly")])
            _ = try await harness.bluez(
                "/org/bluez", "org.bluez.AgentManager1", "RequestDefaultAgent", [.objectPath(agentPath)])

            let device = SimulatorHarness.passkeyDevice
            await #expect(throws: DBusError(name: "org.bluez.Error.AuthenticationFailed", message: "")) {
                try await harness.bluez(device, "org.bluez.Device1", "Pair")
            }
            answer.withLock { $0 = 123456 }
            _ = try await harness.bluez(device, "org.bluez.Device1", "Pair")
            #expect(requests.withLock { $0 } == [device.rawValue, device.rawValue])
            #expect(try await harness.property(device, "org.bluez.Device1", "Paired") == .bool(true))
            #expect(try await harness.property(device, "org.bluez.Device1", "Bonded") == .bool(true))
            await #expect(throws: DBusError(name: "org.bluez.Error.AlreadyExists", message: "")) {
                try await harness.bluez(device, "org.bluez.Device1", "Pair")
            }
        }
    }

    /// Real BlueZ (seen in the real-BlueZ VM, device.c pair_device → agent_get(sender)): `Pair()` asks the
    /// calling client's own agent, registered or not as the default; the default agent answers only for clients
    /// without one (and for pairings the remote side starts). A central sharing bluetoothd with a peripheral
    /// that holds the default agent must still be asked for its passkey.
    @Test func pairingAsksTheCallersOwnAgentBeforeTheDefault() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover(SimulatorHarness.passkeyDevice)
            let asked = Mutex<[String]>([])
            func agent(_ name: String, answering passkey: UInt32) -> DBusInterface {
                DBusInterface(
                    name: "org.bluez.Agent1",
                    methods: [
                        DBusMethod("RequestPasskey", inputs: [DBusArgument("device", "o")], outputs: [DBusArgument("passkey", "u")]) { _ in
                            asked.withLock { $0.append(name) }
                            return [.uint32(passkey)]
                        }
                    ])
            }
            // Another client (a peripheral, a tool) holds the default agent and knows no passkey.
            let other = try await DBusConnection.connect(to: .address(harness.bus.address))
            try await other.objectServer.export([agent("default", answering: 999_999)], at: "/other/agent")
            for (member, arguments) in [("RegisterAgent", [DBusValue.objectPath("/other/agent"), .string("KeyboardOnly")]), ("RequestDefaultAgent", [.objectPath("/other/agent")])] {
                _ = try await other.call(
                    destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1", member: member,
                    arguments: arguments)
            }
            // The pairing client registers its own agent without asking to be the default.
            try await harness.client.objectServer.export([agent("caller", answering: 123_456)], at: "/caller/agent")
            _ = try await harness.bluez(
                "/org/bluez", "org.bluez.AgentManager1", "RegisterAgent", [.objectPath("/caller/agent"), .string("KeyboardOnly")])

            _ = try await harness.bluez(SimulatorHarness.passkeyDevice, "org.bluez.Device1", "Pair")
            #expect(asked.withLock { $0 } == ["caller"])
            #expect(try await harness.property(SimulatorHarness.passkeyDevice, "org.bluez.Device1", "Paired") == .bool(true))
            await other.close()
        }
    }

    @Test func configurationDecodesWithDefaults() throws {
        let json = #"{"seed": 9, "devices": [{"address": "C0:00:00:00:00:09", "pairing": "passkey", "firmware": "2.0", "manufacturerData": {"1": [7]}}]}"#
        let configuration = try JSONDecoder().decode(SimulatorConfiguration.self, from: Data(json.utf8))
        #expect(configuration.seed == 9)
        #expect(configuration.link.mtu == 247)
        let device = try #require(configuration.devices.first)
        #expect(device.pairing == .passkey)
        #expect(device.firmware == .v2_0)
        #expect(device.name == "Tether")
        #expect(device.manufacturerData == ["1": [7]])
        #expect(SimulatorConfiguration.generated(count: 3, seed: 1).devices.map(\.pairing) == [.justWorks, .passkey, .confirmation])
    }
}
