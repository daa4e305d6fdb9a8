import CBOR
import DBus
import Foundation
import Glibc
import Testing

@testable import TetherPeripheral
import SMPDeviceModel

/// The peripheral's SMP service as bluetoothd drives it, over a real dbus-daemon: CCCD enable (StartNotify),
/// AcquireWrite, a request split over two Write Commands, the answer as notifications, and a reset that reboots the
/// device. The requests are written here byte by byte from Zephyr's "SMP Protocol Specification" (the 8-byte
/// header: op, flags, length, group, sequence, command id), not with Tether's SMP client; the image is one imgtool
/// signed (Tests/MCUbootImageTests/Fixtures).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SMPGattServiceTests {
    static let root: DBusObjectPath = "/io/tether/test"
    /// imgtool 2.5.0, `-v 1.2.3+4` (Tests/MCUbootImageTests/make-images.sh).
    static let image = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../MCUbootImageTests/Fixtures/ed25519-hash.img").standardized

    /// Image group (1), state (0), read (op 0), sequence 7; body: an empty map.
    static let imageStateRead: [UInt8] = [0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x07, 0x00, 0xA0]
    /// OS group (0), reset (5), write (op 2), sequence 8; body: an empty map.
    static let reset: [UInt8] = [0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x08, 0x05, 0xA0]

    final class Rebooted: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func happened() { lock.withLock { count += 1 } }
        var times: Int { lock.withLock { count } }
    }

    @Test func aSplitStateReadIsAnsweredAndAResetRebootsTheDevice() async throws {
        let bus = try await DBusPrivateBus.start()
        defer { bus.stop() }
        let peripheral = try await DBusConnection.connect(to: .address(bus.address))
        let bluetoothd = try await DBusConnection.connect(to: .address(bus.address))
        let logURL = FileManager.default.temporaryDirectory.appendingPathComponent("smp-peripheral-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: logURL) }
        let service = SMPGattService(root: Self.root, requiresAuthentication: true)
        let path = service.characteristicPath
        let factory = try #require(SlotImage([UInt8](Data(contentsOf: Self.image))))
        let link = SMPLink(server: SMPBluetoothServer(device: SMPDevice(factoryImage: factory)), log: try EventLog(url: logURL)) { value in
            try? peripheral.objectServer.emitPropertiesChanged(path: path, interface: "org.bluez.GattCharacteristic1", changed: ["Value": .bytes(value)])
        }
        let rebooted = Rebooted()
        await link.onReboot { rebooted.happened() }
        try peripheral.objectServer.addObjectManager(at: Self.root)
        try await service.export(on: peripheral, link: link)

        // What RegisterApplication reads: the service and its characteristic with Zephyr's UUIDs and flags.
        let managed = try await bluetoothd.call(
            destination: peripheral.uniqueName, path: Self.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        let entry = try #require(managed.first?.dictionaryEntries?.first { $0.key.objectPathValue == path })
        let characteristic = try #require(entry.value.dictionaryEntries?.first { $0.key.stringValue == "org.bluez.GattCharacteristic1" }?.value.variantDictionaryValue)
        #expect(characteristic["UUID"] == .string("da2e7828-fbce-4e01-ae9e-261174997c48"))
        #expect(characteristic["Flags"]?.stringsValue == ["write-without-response", "notify", "encrypt-authenticated-write", "encrypt-authenticated-read"])
        #expect(characteristic["Service"] == .objectPath(service.servicePath))

        let notifications = try await bluetoothd.signals(matching: DBusMatchRule(
            interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", path: path))
        _ = try await bluetoothd.call(destination: peripheral.uniqueName, path: path, interface: "org.bluez.GattCharacteristic1", member: "StartNotify")
        // MTU 23: answers come in notifications of at most 20 bytes, reassembled here by the header's length.
        let acquired = try await bluetoothd.call(
            destination: peripheral.uniqueName, path: path, interface: "org.bluez.GattCharacteristic1", member: "AcquireWrite",
            arguments: [.variantDictionary(["mtu": .uint16(23), "link": .string("LE")])])
        let socket = try #require(acquired.first?.fileDescriptorValue?.rawValue)
        func send(_ bytes: [UInt8]) {
            #expect(bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count)
        }
        var values = notifications.makeAsyncIterator()
        func response() async throws -> (header: [UInt8], body: CBORValue) {
            var message: [UInt8] = []
            while message.count < 8 || message.count < 8 + (Int(message[2]) << 8 | Int(message[3])) {
                let signal = try #require(await values.next())
                guard let value = signal.arguments.dropFirst().first?.variantDictionaryValue?["Value"]?.bytesValue else { continue }
                #expect(value.count <= 20)
                message += value
            }
            return (Array(message.prefix(8)), try CBORDecoder().decode(message.dropFirst(8)))
        }

        // The header in one write, the body in the next (SMPBluetoothServer rule 1).
        send(Array(Self.imageStateRead.prefix(8)))
        send(Array(Self.imageStateRead.dropFirst(8)))
        let state = try await response()
        #expect(state.header[0] & 0x07 == 0x01)  // read response
        #expect(state.header[6] == 7)  // the request's sequence
        let images = try #require(state.body["images"]?.arrayValue)
        #expect(images.count == 1)
        #expect(images.first?["version"]?.textValue == "1.2.3.4")
        #expect(images.first?["confirmed"]?.boolValue == true)
        #expect(rebooted.times == 0)

        send(Self.reset)
        let answer = try await response()
        #expect(answer.header[0] & 0x07 == 0x03)  // write response
        #expect(answer.header[7] == 5)
        // The reboot follows the answer (SMPLink rule 4), after bluetoothd had time to send it.
        for _ in 0..<50 where rebooted.times == 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(rebooted.times == 1)
        let facts = try String(contentsOf: logURL, encoding: .utf8)
        #expect(facts.contains(#""fact":"smp-reset""#))
        await peripheral.close()
        await bluetoothd.close()
    }
}
