import DBus
import TetherDeviceModel
import Foundation
import Glibc
import LinkProtocol
import Testing

@testable import TetherPeripheral

/// The peripheral's GATT application as bluetoothd reads and drives it, over a real dbus-daemon: GetManagedObjects
/// (what RegisterApplication checks), then CCCD enable (StartNotify), AcquireWrite and frames both ways.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct GattApplicationTests {
    /// Link protocol §7.1: HELLO minVersion 1, maxVersion 2, window 16.
    static let hello = FrameEncoder.frame(version: 1, type: 0x01, sequence: SequenceNumber(0), payload: [1, 2, 16])
    static let root: DBusObjectPath = "/io/tether/test"

    struct Rig {
        let bus: DBusPrivateBus
        let peripheral: DBusConnection
        let bluetoothd: DBusConnection
        let application: GattApplication
        let link: DeviceLink
        let logURL: URL
    }

    static func withRig(requiresAuthentication: Bool, _ body: (Rig) async throws -> Void) async throws {
        let bus = try await DBusPrivateBus.start()
        defer { bus.stop() }
        let peripheral = try await DBusConnection.connect(to: .address(bus.address))
        let bluetoothd = try await DBusConnection.connect(to: .address(bus.address))
        let logURL = FileManager.default.temporaryDirectory.appendingPathComponent("peripheral-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: logURL) }
        let log = try EventLog(url: logURL)
        let application = GattApplication(root: root, requiresAuthentication: requiresAuthentication)
        let txPath = application.txPath
        let link = DeviceLink(profile: .v2_0(serial: "TTH-TEST-1"), log: log) { value in
            try? peripheral.objectServer.emitPropertiesChanged(
                path: txPath, interface: "org.bluez.GattCharacteristic1", changed: ["Value": .bytes(value)])
        }
        try await application.export(on: peripheral, link: link)
        try await body(Rig(bus: bus, peripheral: peripheral, bluetoothd: bluetoothd, application: application, link: link, logURL: logURL))
        await peripheral.close()
        await bluetoothd.close()
    }

    @Test func managedObjectsAreWhatRegisterApplicationExpects() async throws {
        try await Self.withRig(requiresAuthentication: true) { rig in
            let reply = try await rig.bluetoothd.call(
                destination: rig.peripheral.uniqueName, path: Self.root, interface: "org.freedesktop.DBus.ObjectManager",
                member: "GetManagedObjects")
            var objects: [DBusObjectPath: [String: [String: DBusValue]]] = [:]
            for entry in reply.first?.dictionaryEntries ?? [] {
                guard let path = entry.key.objectPathValue else { continue }
                var interfaces: [String: [String: DBusValue]] = [:]
                for interface in entry.value.dictionaryEntries ?? [] {
                    if let name = interface.key.stringValue { interfaces[name] = interface.value.variantDictionaryValue ?? [:] }
                }
                objects[path] = interfaces
            }
            let service = try #require(objects[rig.application.servicePath]?["org.bluez.GattService1"])
            #expect(service["UUID"] == .string(TetherGATT.service))
            #expect(service["Primary"] == .bool(true))
            let rx = try #require(objects[rig.application.rxPath]?["org.bluez.GattCharacteristic1"])
            let tx = try #require(objects[rig.application.txPath]?["org.bluez.GattCharacteristic1"])
            // real-bluez-vm.md pitfall 8: Service must be an object path.
            #expect(rx["Service"] == .objectPath(rig.application.servicePath))
            #expect(tx["Service"] == .objectPath(rig.application.servicePath))
            #expect(rx["Flags"]?.stringsValue == ["write-without-response", "encrypt-authenticated-write"])
            #expect(tx["Flags"]?.stringsValue == ["notify", "encrypt-authenticated-read"])
            // WriteAcquired present: bluetoothd sends Write Commands through AcquireWrite's socket, in order.
            #expect(rx["WriteAcquired"] == .bool(false))
            #expect(tx["NotifyAcquired"] == nil)
        }
    }

    @Test func helloThroughAcquireWriteIsAnsweredByNotifications() async throws {
        try await Self.withRig(requiresAuthentication: false) { rig in
            let notifications = try await rig.bluetoothd.signals(matching: DBusMatchRule(
                interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", path: rig.application.txPath))
            _ = try await rig.bluetoothd.call(
                destination: rig.peripheral.uniqueName, path: rig.application.txPath,
                interface: "org.bluez.GattCharacteristic1", member: "StartNotify")
            let acquired = try await rig.bluetoothd.call(
                destination: rig.peripheral.uniqueName, path: rig.application.rxPath,
                interface: "org.bluez.GattCharacteristic1", member: "AcquireWrite",
                arguments: [.variantDictionary(["mtu": .uint16(185), "link": .string("LE")])])
            #expect(acquired.last == .uint16(185))
            let socket = try #require(acquired.first?.fileDescriptorValue?.rawValue)
            // HELLO cut in two Write Commands: the halves must arrive in order to make a frame.
            let halves = [Array(Self.hello.prefix(5)), Array(Self.hello.dropFirst(5))]
            for half in halves {
                #expect(half.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == half.count)
            }
            var decoder = FrameDecoder()
            var types: [UInt8] = []
            for await signal in notifications {
                guard let value = signal.arguments.dropFirst().first?.variantDictionaryValue?["Value"]?.bytesValue else { continue }
                #expect(value.count <= 185 - 3)
                decoder.append(value)
                while let frame = try decoder.decode() { types.append(frame.header.type) }
                if types.contains(MessageType.deviceInfo.rawValue) { break }
            }
            #expect(types.first == MessageType.deviceInfo.rawValue)
            #expect(await rig.link.isWriteAcquired)
            let facts = try String(contentsOf: rig.logURL, encoding: .utf8)
            #expect(facts.contains(#""fact":"write-acquired""#))
            #expect(facts.contains(#""fact":"link-up""#))
        }
    }
}
