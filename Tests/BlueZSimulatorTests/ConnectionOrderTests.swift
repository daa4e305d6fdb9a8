import BlueZSimulator
import DBus
import Testing

/// Connect and disconnect signal order, and the connect faults.
@Suite(.serialized)
struct ConnectionOrderTests {
    @Test func connectAnnouncesGattBeforeServicesResolved() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            let recorder = try await harness.record()
            let device = SimulatorHarness.firstDevice

            _ = try await harness.bluez(device, "org.bluez.Device1", "Connect")
            // Connected=true is emitted before the reply, so the property already reads true.
            #expect(try await harness.property(device, "org.bluez.Device1", "Connected") == .bool(true))
            let connected = try await recorder.waitFor("Connected=true") { $0.changes("Connected", to: .bool(true), at: device) }
            let resolved = try await recorder.waitFor("ServicesResolved=true") {
                $0.changes("ServicesResolved", to: .bool(true), at: device)
            }
            let added = recorder.signals.enumerated().compactMap { index, signal in
                signal.addedObject.map { (index, $0.path.rawValue, Set($0.interfaces.keys)) }
            }
            let paths = added.map(\.1)
            #expect(paths == [
                "\(device.rawValue)/service0010", "\(device.rawValue)/service0010/char0011",
                "\(device.rawValue)/service0010/char0013", "\(device.rawValue)/service0010/char0013/desc0015",
                "\(device.rawValue)/service0010/char0013/desc0016",
                "\(device.rawValue)/service0020", "\(device.rawValue)/service0020/char0021",
                "\(device.rawValue)/service0020/char0023", "\(device.rawValue)/service0020/char0025",
                "\(device.rawValue)/service0020/char0027",
                "\(device.rawValue)/service0030", "\(device.rawValue)/service0030/char0031",
            ])
            #expect(added.allSatisfy { connected < $0.0 && $0.0 < resolved })
            #expect(added.allSatisfy { $0.2.contains("org.freedesktop.DBus.Introspectable") })

            let objects = try await harness.managedObjects()
            let tx = try #require(objects[SimulatorHarness.tx.rawValue]?["org.bluez.GattCharacteristic1"])
            #expect(tx["UUID"] == .string("54455448-0003-4c1e-8e5a-7a3d2f1b0c00"))
            #expect(tx["Service"] == .objectPath(SimulatorHarness.tetherService))
            #expect(tx["Flags"] == .strings(["notify"]))
            #expect(tx["MTU"] == .uint16(247))
            #expect(tx["NotifyAcquired"] == .bool(false))
            #expect(tx["Notifying"] == .bool(false))
            let rx = try #require(objects[SimulatorHarness.rx.rawValue]?["org.bluez.GattCharacteristic1"])
            #expect(rx["Flags"] == .strings(["write-without-response"]))
            #expect(rx["WriteAcquired"] == .bool(false))
            #expect(objects[SimulatorHarness.tetherService.rawValue]?["org.bluez.GattService1"]?["Primary"] == .bool(true))

            let before = recorder.signals.count
            _ = try await harness.bluez(device, "org.bluez.Device1", "Disconnect")
            #expect(try await harness.property(device, "org.bluez.Device1", "Connected") == .bool(false))
            let unresolved = try await recorder.waitFor("ServicesResolved=false") {
                $0.changes("ServicesResolved", to: .bool(false), at: device)
            }
            let disconnectedSignal = try await recorder.waitFor("Disconnected(ss)") {
                $0.member == "Disconnected" && $0.path == device
            }
            let disconnected = try await recorder.waitFor("Connected=false") {
                $0.changes("Connected", to: .bool(false), at: device)
            }
            #expect(before <= unresolved && unresolved < disconnectedSignal && disconnectedSignal < disconnected)
            #expect(recorder.signals[disconnectedSignal].arguments.first == .string("org.bluez.Reason.Local"))
            // Cache=always: the GATT objects stay.
            #expect(try await harness.managedObjects()[SimulatorHarness.tx.rawValue] != nil)
        }
    }

    @Test func connectFailureFaults() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            let device = SimulatorHarness.firstDevice
            _ = try await harness.control(
                "InjectFault",
                [.string("connect-failure"), .variantDictionary(["device": .objectPath(device), "count": .uint32(1)])])
            do {
                _ = try await harness.bluez(device, "org.bluez.Device1", "Connect")
                Issue.record("Connect should fail")
            } catch let error as DBusError {
                #expect(error.name == "org.bluez.Error.Failed")
                #expect(error.message == "le-connection-abort-by-local")
            }
            _ = try await harness.control(
                "InjectFault", [.string("connect-failure"), .variantDictionary(["error": .string("in-progress")])])
            await #expect(throws: DBusError(name: "org.bluez.Error.InProgress", message: "")) {
                try await harness.bluez(device, "org.bluez.Device1", "Connect")
            }
            try await harness.connect()
        }
    }

    @Test func faultsDropTheLink() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            let device = SimulatorHarness.firstDevice
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.control("Reboot", [.objectPath(device)])
            try await recorder.waitFor("remote Disconnected") {
                $0.member == "Disconnected" && $0.arguments.first == .string("org.bluez.Reason.Remote")
            }
            #expect(try await harness.property(device, "org.bluez.Device1", "Connected") == .bool(false))

            try await harness.connect()
            _ = try await harness.control("InjectFault", [.string("adapter-power"), .variantDictionary(["powered": .bool(false)])])
            #expect(try await harness.property(device, "org.bluez.Device1", "Connected") == .bool(false))
            #expect(try await harness.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Powered") == .bool(false))
            await #expect(throws: DBusError(name: "org.bluez.Error.NotReady", message: "")) {
                try await harness.bluez(device, "org.bluez.Device1", "Connect")
            }
            _ = try await harness.control("InjectFault", [.string("adapter-power"), .variantDictionary(["powered": .bool(true)])])
            try await harness.connect()
        }
    }
}
