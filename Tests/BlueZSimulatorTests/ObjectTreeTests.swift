import BlueZSimulator
import DBus
import Testing

/// The object tree and the discovery signals, as a BlueZ client sees them (bluez-dbus-facts.md).
@Suite(.serialized)
struct ObjectTreeTests {
    @Test func managedObjectsHaveBlueZShape() async throws {
        try await SimulatorHarness.with { harness in
            let objects = try await harness.managedObjects()

            #expect(objects["/org/bluez"]?["org.bluez.AgentManager1"] != nil)
            let adapter = try #require(objects["/org/bluez/hci0"]?["org.bluez.Adapter1"])
            #expect(adapter["Address"] == .string("00:AA:01:00:00:01"))
            #expect(adapter["Powered"] == .bool(true))
            #expect(adapter["Discovering"] == .bool(false))
            #expect(adapter["Roles"]?.stringsValue?.contains("central") == true)
            // Devices are only known once discovery has seen them advertise.
            #expect(!objects.keys.contains { $0.hasPrefix("/org/bluez/hci0/dev_") })
            #expect(objects["/io/tether/simulator"]?["io.tether.Simulator1"] != nil)
        }
    }

    @Test func discoveryAnnouncesDevicesAndStopInvalidatesRSSI() async throws {
        try await SimulatorHarness.with { harness in
            let recorder = try await harness.record()

            _ = try await harness.bluez(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")
            let discovering = try await recorder.waitFor("Discovering=true") {
                $0.changes("Discovering", to: .bool(true), at: SimulatorHarness.adapter)
            }
            let added = try await recorder.waitFor("InterfacesAdded of the device") {
                $0.addedObject?.path == SimulatorHarness.firstDevice
            }
            #expect(discovering < added)
            let announced = try #require(recorder.signals[added].addedObject)
            #expect(recorder.signals[added].path == .root)
            #expect(Set(announced.interfaces.keys) == [
                "org.bluez.Device1", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties",
            ])
            #expect(announced.interfaces["org.freedesktop.DBus.Properties"]?.isEmpty == true)
            let device = try #require(announced.interfaces["org.bluez.Device1"])
            #expect(device["Name"] == .string("Tether-0001"))
            #expect(device["Address"] == .string("C0:54:45:00:00:01"))
            #expect(device["Adapter"] == .objectPath(SimulatorHarness.adapter))
            #expect(device["RSSI"]?.int16Value != nil)
            #expect(device["Connected"] == .bool(false))
            #expect(device["UUIDs"]?.stringsValue == ["54455448-0001-4c1e-8e5a-7a3d2f1b0c00"])
            let manufacturer = try #require(device["ManufacturerData"]?.dictionaryEntries?.first)
            #expect(manufacturer.key == .uint16(0xFFFF))
            #expect(manufacturer.value.unwrappingVariants.bytesValue == [0x54, 0x01])

            // A second StartDiscovery from the same client is refused, as BlueZ does.
            await #expect(throws: DBusError(name: "org.bluez.Error.InProgress", message: "")) {
                try await harness.bluez(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")
            }

            _ = try await harness.bluez(SimulatorHarness.adapter, "org.bluez.Adapter1", "StopDiscovery")
            try await recorder.waitFor("RSSI invalidated") {
                $0.path == SimulatorHarness.firstDevice && $0.invalidatedProperties == ["RSSI", "TxPower"]
            }
            try await recorder.waitFor("Discovering=false") {
                $0.changes("Discovering", to: .bool(false), at: SimulatorHarness.adapter)
            }
            let objects = try await harness.managedObjects()
            #expect(objects[SimulatorHarness.firstDevice.rawValue]?["org.bluez.Device1"]?["RSSI"] == nil)
        }
    }

    /// Real BlueZ with btvirt's controllers publishes RSSI = 127, HCI's "not available" (real-bluez VM, run 1 of
    /// the tetherd scenario): a device configured that way must show exactly 127 on every report.
    @Test func rssiNotAvailableIsPublishedAsExactly127() async throws {
        var configuration = SimulatorConfiguration.generated(count: 1, seed: 7)
        configuration.devices[0].rssi = 127
        try await SimulatorHarness.with(configuration) { harness in
            let recorder = try await harness.record()
            _ = try await harness.bluez(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")
            let added = try await recorder.waitFor("InterfacesAdded of the device") {
                $0.addedObject?.path == SimulatorHarness.firstDevice
            }
            #expect(recorder.signals[added].addedObject?.interfaces["org.bluez.Device1"]?["RSSI"] == .int16(127))
            let update = try await recorder.waitFor("a later RSSI report") {
                $0.path == SimulatorHarness.firstDevice && $0.changedProperties?["RSSI"] != nil
            }
            #expect(recorder.signals[update].changedProperties?["RSSI"] == .int16(127))
            _ = try await harness.bluez(SimulatorHarness.adapter, "org.bluez.Adapter1", "StopDiscovery")
        }
    }

    @Test func removeDeviceDropsItsObjects() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.bluez(
                SimulatorHarness.adapter, "org.bluez.Adapter1", "RemoveDevice", [.objectPath(SimulatorHarness.firstDevice)])
            let objects = try await harness.managedObjects()
            #expect(!objects.keys.contains { $0.hasPrefix(SimulatorHarness.firstDevice.rawValue) })
            // Children go before their parents.
            try await recorder.waitFor("device removed") {
                $0.member == "InterfacesRemoved" && $0.arguments.first == .objectPath(SimulatorHarness.firstDevice)
            }
            let removed = recorder.signals.filter { $0.member == "InterfacesRemoved" }.compactMap {
                $0.arguments.first?.objectPathValue?.rawValue
            }
            #expect(removed.last == SimulatorHarness.firstDevice.rawValue)
            #expect(removed.firstIndex(of: SimulatorHarness.tx.rawValue)! < removed.firstIndex(of: SimulatorHarness.tetherService.rawValue)!)
        }
    }
}
