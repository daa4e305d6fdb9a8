import BlueZ
import BlueZSimulator
import DBus
import Testing

@Suite(.serialized)
struct ObjectTreeTests {
    @Test func theMirrorSeesDiscoveryResults() async throws {
        try await BlueZHarness.with { harness in
            let tree = BlueZObjectTree(session: harness.session)
            let events = EventRecorder(await tree.events())
            let running = Task { try await tree.run() }
            defer { running.cancel() }
            try await events.waitFor("synchronized") { if case .synchronized = $0 { true } else { false } }
            #expect(await tree.interfaces(at: "/org/bluez/hci0")?[BlueZInterfaceName.adapter] != nil)
            #expect(await tree.devices.isEmpty)

            try await harness.adapter.startDiscovery()
            try await events.waitFor("Tether-0001 added") { $0.addedDevice == BlueZHarness.firstDevice }
            try await events.waitFor("Discovering=true") {
                $0 == .propertiesChanged(
                    "/org/bluez/hci0", interface: BlueZInterfaceName.adapter, changed: ["Discovering": .bool(true)],
                    invalidated: [])
            }
            let device = DeviceProperties(try #require(await tree.devices[BlueZHarness.firstDevice]))
            #expect(device.address == "C0:54:45:00:00:01")
            #expect(device.name == "Tether-0001")
            #expect(device.manufacturerData == [0xFFFF: [0x54, 0x01]])

            // StopDiscovery invalidates RSSI, and the mirror drops it.
            try await harness.adapter.stopDiscovery()
            try await events.waitFor("RSSI invalidated") {
                if case .deviceChanged(BlueZHarness.firstDevice, _, let invalidated) = $0 {
                    invalidated.contains("RSSI")
                } else { false }
            }
            #expect(await tree.devices[BlueZHarness.firstDevice]?["RSSI"] == nil)

            // Connecting announces GATT objects; the mirror finds the TX characteristic by UUID.
            try await harness.firstDevice.connect()
            try await harness.firstDevice.waitUntilServicesResolved()
            try await events.waitFor("ServicesResolved") {
                $0 == .deviceChanged(
                    BlueZHarness.firstDevice, changed: ["ServicesResolved": .bool(true)], invalidated: [])
            }
            #expect(
                await tree.characteristic(
                    uuid: BlueZHarness.txUUID.uppercased(), inService: BlueZHarness.serviceUUID, of: BlueZHarness.firstDevice)
                    == BlueZHarness.tx)
            // Scoped to its service: TX is not found in the Device Information Service (0x180A).
            #expect(await tree.characteristic(uuid: BlueZHarness.txUUID, inService: "180A", of: BlueZHarness.firstDevice) == nil)
            let services = await tree.services(of: BlueZHarness.firstDevice)
            let tether = try #require(services.first { $0.uuid == BlueZHarness.serviceUUID })
            #expect(tether.characteristics.map(\.uuid) == [BlueZHarness.rxUUID, BlueZHarness.txUUID])
            #expect(tether.characteristic(BlueZHarness.txUUID)?.flags == ["notify"])
            #expect(tether.characteristic(BlueZHarness.txUUID)?.canSubscribe == true)
            #expect(services.contains { $0.assignedNumber == 0x180A })

            // RemoveDevice: the device and its GATT objects leave the mirror.
            try await harness.adapter.removeDevice(BlueZHarness.firstDevice)
            try await events.waitFor("removed") { $0.removedDevice == BlueZHarness.firstDevice }
            #expect(await tree.snapshot.keys.allSatisfy { !$0.rawValue.hasPrefix(BlueZHarness.firstDevice.rawValue) })
        }
    }

    @Test func signalsFromAnotherSenderAreIgnored() async throws {
        try await BlueZHarness.with { harness in
            let tree = BlueZObjectTree(session: harness.session)
            let events = EventRecorder(await tree.events())
            let running = Task { try await tree.run() }
            defer { running.cancel() }
            try await events.waitFor("synchronized") { if case .synchronized = $0 { true } else { false } }
            // An impostor announces a device as if it were bluetoothd.
            let impostor = try await DBusConnection.connect(to: .address(harness.bus.address))
            let fake: DBusObjectPath = "/org/bluez/hci0/dev_66_66_66_66_66_66"
            try impostor.emitSignal(
                path: .root, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                arguments: [
                    .objectPath(fake),
                    .dictionary(
                        keySignature: "s", valueSignature: "a{sv}",
                        [
                            DBusDictionaryEntry(
                                key: .string(BlueZInterfaceName.device),
                                value: .variantDictionary(["Address": .string("66:66:66:66:66:66")]))
                        ]),
                ])
            await impostor.close()
            try await harness.adapter.startDiscovery()
            try await events.waitFor("Tether-0001 added") { $0.addedDevice == BlueZHarness.firstDevice }
            #expect(await tree.devices[fake] == nil)
            #expect(!events.elements.contains { $0.addedDevice == fake })
        }
    }

    @Test func theMirrorResynchronisesAfterABluetoothdRestart() async throws {
        try await BlueZHarness.with { harness in
            // Discovery finds all three; Tether-0001 (just works) is bonded, so the restarted bluetoothd loads it
            // again, the others are forgotten.
            try await harness.discover(BlueZHarness.firstDevice)
            try await harness.firstDevice.pair()
            let third: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_03"
            let all: Set<DBusObjectPath> = [BlueZHarness.firstDevice, BlueZHarness.passkeyDevice, third]

            let tree = BlueZObjectTree(session: harness.session)
            let events = EventRecorder(await tree.events())
            let running = Task { try await tree.run() }
            defer { running.cancel() }
            try await events.waitFor("first synchronisation") { if case .synchronized = $0 { true } else { false } }
            #expect(await Set(tree.devices.keys) == all)
            let owner = try #require(await tree.currentOwner)

            try await harness.inject("bluetoothd-restart", ["downtime_ms": .uint32(200)])
            let gone = try await events.waitFor("bluetoothd gone") { $0 == .bluezRestarted(owner: nil) }
            let back = try await events.waitFor("bluetoothd back", after: gone) { $0 == .bluezRestarted(owner: owner) }
            let resynced = try await events.waitFor("second synchronisation", after: back) {
                if case .synchronized = $0 { true } else { false }
            }
            #expect(gone < back && back < resynced)
            let seen = events.elements
            #expect(Set(seen[gone..<back].compactMap(\.removedDevice)) == all)
            #expect(seen[back...].compactMap(\.addedDevice) == [BlueZHarness.firstDevice])
            #expect(await tree.synchronizationCount == 2)
            #expect(await Set(tree.devices.keys) == [BlueZHarness.firstDevice])
            #expect(await tree.interfaces(at: "/org/bluez/hci0")?[BlueZInterfaceName.adapter] != nil)

            // Signals of the new bluetoothd are applied again.
            try await harness.adapter.startDiscovery()
            try await events.waitFor("Tether-0003 rediscovered") { $0.addedDevice == third }
            try await harness.adapter.stopDiscovery()
        }
    }
}

@Suite(.serialized)
struct AdapterTests {
    @Test func discoveryWithAFilterFindsDevicesAndRemoveDeviceForgetsThem() async throws {
        try await BlueZHarness.with { harness in
            let adapter = harness.adapter
            try await adapter.setDiscoveryFilter(DiscoveryFilter(uuids: ["54455448-0001-4c1e-8e5a-7a3d2f1b0c00"]))
            let tree = BlueZObjectTree(session: harness.session)
            let events = EventRecorder(await tree.events())
            let running = Task { try await tree.run() }
            defer { running.cancel() }
            try await events.waitFor("synchronized") { if case .synchronized = $0 { true } else { false } }
            try await adapter.startDiscovery()
            #expect(try await adapter.properties()["Discovering"] == .bool(true))
            try await events.waitFor("Tether-0001 added") { $0.addedDevice == BlueZHarness.firstDevice }
            let properties = try await harness.firstDevice.properties()
            #expect(properties.address == "C0:54:45:00:00:01")
            #expect(properties.connected == false)
            #expect(harness.firstDevice.address == "C0:54:45:00:00:01")
            #expect(adapter.devicePath(address: "c0:54:45:00:00:01") == BlueZHarness.firstDevice)
            try await adapter.stopDiscovery()
            #expect(try await adapter.properties()["Discovering"] == .bool(false))

            try await adapter.removeDevice(BlueZHarness.firstDevice)
            await #expect(throws: BlueZError.self) {
                try await harness.firstDevice.properties()
            }
        }
    }

    @Test func powerOnWaitsForPowered() async throws {
        try await BlueZHarness.with { harness in
            try await harness.inject("adapter-power", ["powered": .bool(false)])
            #expect(try await harness.adapter.isPowered() == false)
            try await harness.adapter.powerOn(timeout: .seconds(30))
            #expect(try await harness.adapter.isPowered())
        }
    }
}
