import BlueZSimulator
import DBus
import Foundation
import SMPDeviceModel
import Testing
import TetherTestSupport

/// The MCUmgr SMP service of a simulated device (SimulatedDevice+SMP) through BlueZ's D-Bus surface: the GATT objects
/// (Zephyr's smp_bt.h UUIDs, write-without-response + notify, a CCCD), requests split over several WriteValue
/// "command" calls or AcquireWrite packets, responses cut into notifications of MTU − 3, and a reset that reboots the
/// device and drops the link. The oracle for a response is the same device model answering the whole request at once.
@Suite(.serialized)
struct SMPServiceTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("MCUbootImageTests/Fixtures")
    static let factoryImage = fixtures.appendingPathComponent("ed25519-hash.img").path
    static let service: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0040"
    static let characteristic: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0040/char0041"
    static let cccd: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0040/char0041/desc0043"
    static let gatt = "org.bluez.GattCharacteristic1"

    static func configuration(mtu: UInt16 = 247, reassembly: Bool = true) -> SimulatorConfiguration {
        var device = DeviceConfiguration(address: "C0:54:45:00:00:01")
        device.name = "Tether-SMP"
        device.smp = SMPServiceConfiguration(image: factoryImage, bufSize: 512, bufCount: 4, reassembly: reassembly)
        var configuration = SimulatorConfiguration(devices: [device], seed: 3)
        configuration.link.mtu = mtu
        return configuration
    }

    /// Echo `{"d": text}` as an SMP v2 write (Zephyr "SMP Protocol Specification"; RFC 8949 §3.1 for the map and
    /// text heads), sequence `sequence`.
    static func echo(_ text: String, sequence: UInt8) -> [UInt8] {
        let utf8 = Array(text.utf8)
        let head: [UInt8] = utf8.count < 24 ? [0x60 | UInt8(utf8.count)] : [0x78, UInt8(utf8.count)]
        let body: [UInt8] = [0xA1, 0x61, 0x64] + head + utf8
        return [0x0A, 0x00, 0x00, UInt8(body.count), 0x00, 0x00, sequence, 0x00] + body
    }

    static func expectedAnswer(_ request: [UInt8]) throws -> [UInt8] {
        var device = SMPDevice(
            configuration: .init(bufferSize: 512, bufferCount: 4),
            factoryImage: try #require(SlotImage([UInt8](try Data(contentsOf: URL(fileURLWithPath: factoryImage))))))
        let answer = device.handle(request)
        return try #require(answer)
    }

    /// The Value changes of the SMP characteristic recorded so far, in order.
    static func notifications(_ recorder: SignalRecorder) -> [[UInt8]] {
        recorder.signals.compactMap { signal in
            guard signal.path == characteristic, let value = signal.changedProperties?["Value"] else { return nil }
            return value.bytesValue
        }
    }

    @Test func theDeviceOffersZephyrsSMPServiceBesideItsOwn() async throws {
        try await SimulatorHarness.with(Self.configuration()) { harness in
            try await harness.discover()
            let uuids = try await harness.property(SimulatorHarness.firstDevice, "org.bluez.Device1", "UUIDs")?.stringsValue
            #expect(uuids?.contains("8d53dc1d-1db7-4cd3-868b-8a527460aa84") == true)
            try await harness.connect()
            let objects = try await harness.managedObjects()
            #expect(objects[Self.service.rawValue]?["org.bluez.GattService1"]?["UUID"] == .string("8d53dc1d-1db7-4cd3-868b-8a527460aa84"))
            let characteristic = try #require(objects[Self.characteristic.rawValue]?[Self.gatt])
            #expect(characteristic["UUID"] == .string("da2e7828-fbce-4e01-ae9e-261174997c48"))
            #expect(characteristic["Flags"] == .strings(["write-without-response", "notify"]))
            #expect(characteristic["NotifyAcquired"] != nil && characteristic["WriteAcquired"] != nil)
            #expect(objects[Self.cccd.rawValue]?["org.bluez.GattDescriptor1"]?["UUID"] == .string("00002902-0000-1000-8000-00805f9b34fb"))
            // The Tether service is still there, unchanged.
            #expect(objects[SimulatorHarness.tx.rawValue] != nil)
        }
    }

    /// MTU 23: a request in writes of 20 bytes (WriteValue type "command"), the answer in notifications of 20 bytes.
    @Test func aSplitRequestIsAnsweredInNotificationsOfMTUMinusThree() async throws {
        try await SimulatorHarness.with(Self.configuration(mtu: 23)) { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "StartNotify")
            #expect(try await harness.bluez(Self.cccd, "org.bluez.GattDescriptor1", "ReadValue", [.variantDictionary([:])]) == [.bytes([0x01, 0x00])])
            let request = Self.echo(String(repeating: "tether-", count: 12), sequence: 7)
            let expected = try Self.expectedAnswer(request)
            for start in stride(from: 0, to: request.count, by: 20) {
                _ = try await harness.bluez(
                    Self.characteristic, Self.gatt, "WriteValue",
                    [.bytes(Array(request[start..<min(start + 20, request.count)])), .variantDictionary(["type": .string("command")])])
            }
            try await waitUntil("the whole answer", seconds: 30) { Self.notifications(recorder).joined().count >= expected.count }
            let received = Self.notifications(recorder)
            #expect(Array(received.joined()) == expected)
            #expect(received.count == (expected.count + 19) / 20)
            #expect(received.allSatisfy { $0.count <= 20 })
            let device = try #require(await harness.simulator.device(at: SimulatorHarness.firstDevice))
            #expect(await device.smp?.requestsAnswered == 1)
        }
    }

    /// A device without reassembly drops a request split over several writes (nothing answers, so the client's
    /// time-out is all it sees) and answers the same request in one write.
    @Test func withoutReassemblyOnlyWholeWritesAreAnswered() async throws {
        try await SimulatorHarness.with(Self.configuration(reassembly: false)) { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "StartNotify")
            let command = DBusValue.variantDictionary(["type": .string("command")])
            let split = Self.echo("split", sequence: 1)
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "WriteValue", [.bytes(Array(split[..<10])), command])
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "WriteValue", [.bytes(Array(split[10...])), command])
            let whole = Self.echo("whole", sequence: 2)
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "WriteValue", [.bytes(whole), command])
            try await waitUntil("the answer to the whole write", seconds: 30) { !Self.notifications(recorder).isEmpty }
            // Notifications go out in order, so one for the split request would have come first.
            #expect(Self.notifications(recorder) == [try Self.expectedAnswer(whole)])
            let device = try #require(await harness.simulator.device(at: SimulatorHarness.firstDevice))
            #expect(await device.smp?.writesDropped == 2)
        }
    }

    /// A request cut off by a disconnect is forgotten (the CCCD goes to 0 with the link, SMPBluetoothServer rule 5): on
    /// the next link the client's whole request is answered, not appended to the old fragment and dropped.
    @Test func aDisconnectForgetsAPartialRequest() async throws {
        try await SimulatorHarness.with(Self.configuration()) { harness in
            try await harness.discover()
            try await harness.connect()
            let command = DBusValue.variantDictionary(["type": .string("command")])
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "StartNotify")
            let request = Self.echo("again, from the start", sequence: 6)
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "WriteValue", [.bytes(Array(request[..<12])), command])
            _ = try await harness.bluez(SimulatorHarness.firstDevice, "org.bluez.Device1", "Disconnect")
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "StartNotify")
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "WriteValue", [.bytes(request), command])
            try await waitUntil("the answer on the new link", seconds: 30) { !Self.notifications(recorder).isEmpty }
            #expect(Self.notifications(recorder) == [try Self.expectedAnswer(request)])
            let device = try #require(await harness.simulator.device(at: SimulatorHarness.firstDevice))
            #expect(await device.smp?.writesDropped == 0)
        }
    }

    /// AcquireWrite / AcquireNotify carry SMP too; a reset is answered, then the device reboots and the link drops.
    @Test func acquiredSocketsCarrySMPAndAResetDropsTheLink() async throws {
        try await SimulatorHarness.with(Self.configuration()) { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            let notify = try await harness.bluez(Self.characteristic, Self.gatt, "AcquireNotify", [.variantDictionary([:])])
            let write = try await harness.bluez(Self.characteristic, Self.gatt, "AcquireWrite", [.variantDictionary([:])])
            #expect(notify.last == .uint16(247) && write.last == .uint16(247))
            let notifyFD = try #require(notify.first?.fileDescriptorValue?.rawValue)
            let writeFD = try #require(write.first?.fileDescriptorValue?.rawValue)
            let request = Self.echo("over the sockets", sequence: 4)
            #expect(sendPacket(writeFD, Array(request[..<9])))
            #expect(sendPacket(writeFD, Array(request[9...])))
            #expect(try await receivePacket(notifyFD) == (try Self.expectedAnswer(request)))

            // OS reset (group 0, command 5), SMP v2 write, body {}.
            #expect(sendPacket(writeFD, [0x0A, 0x00, 0x00, 0x01, 0x00, 0x00, 0x05, 0x05, 0xA0]))
            #expect(try await receivePacket(notifyFD) == [0x0B, 0x00, 0x00, 0x01, 0x00, 0x00, 0x05, 0x05, 0xA0])
            try await recorder.waitFor("Connected=false after the reset") {
                $0.changes("Connected", to: .bool(false), at: SimulatorHarness.firstDevice)
            }
            #expect(recorder.signals.contains { $0.member == "Disconnected" && $0.arguments.first == .string("org.bluez.Reason.Timeout") })
            let device = try #require(await harness.simulator.device(at: SimulatorHarness.firstDevice))
            #expect(await device.smpDevice?.slots.resets == 1)
            notify.first?.fileDescriptorValue?.close()
            write.first?.fileDescriptorValue?.close()
        }
    }

    /// The gateway's writes cross the link in connection events, `notificationsPerEvent` of them per event (LinkModel):
    /// with one a second, three writes just sent have not all reached the device, and the whole answer takes at
    /// least as many events as there were writes and notifications. (A lower bound: a loaded machine only adds.)
    @Test func writesCrossTheLinkAFewPerConnectionEvent() async throws {
        var configuration = Self.configuration(mtu: 23)
        configuration.link.connectionIntervalMilliseconds = 1000
        configuration.link.notificationsPerEvent = 1
        try await SimulatorHarness.with(configuration) { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "StartNotify")
            let request = Self.echo("three writes", sequence: 9)
            let expected = try Self.expectedAnswer(request)
            let writes = stride(from: 0, to: request.count, by: 20).map { Array(request[$0..<min($0 + 20, request.count)]) }
            #expect(writes.count == 2 || writes.count == 3)
            let device = try #require(await harness.simulator.device(at: SimulatorHarness.firstDevice))
            let started = ContinuousClock.now
            for write in writes {
                _ = try await harness.bluez(Self.characteristic, Self.gatt, "WriteValue", [.bytes(write), .variantDictionary(["type": .string("command")])])
            }
            #expect(await device.smp?.requestsAnswered == 0, "the writes went to the device before any connection event carried them")
            try await waitUntil("the whole answer", seconds: 60) { Self.notifications(recorder).joined().count >= expected.count }
            #expect(Array(Self.notifications(recorder).joined()) == expected)
            // The last write and the first notification share an event, and the first event comes within one interval:
            // the last notification went out no sooner than (writes + notifications - 2) intervals after the start.
            let events = writes.count + Self.notifications(recorder).count - 1
            #expect(started.duration(to: .now) >= .seconds(events - 1), "\(events) connection events in \(started.duration(to: .now))")
        }
    }

    /// A request that keeps the flash busy is answered once the flash is done (the erase of a 64 KiB slot at 100 ms a
    /// 4 KiB sector: 1.6 s), and the request written behind it waits its turn (Zephyr handles one at a time).
    @Test func anEraseIsAnsweredWhenTheFlashIsDone() async throws {
        var configuration = Self.configuration()
        configuration.devices[0].smp?.slotSize = 0x1_0000
        configuration.devices[0].smp?.flash = .init(sectorSize: 4096, eraseMillisecondsPerSector: 100, writeMicrosecondsPerKiB: 0)
        try await SimulatorHarness.with(configuration) { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "StartNotify")
            let command = DBusValue.variantDictionary(["type": .string("command")])
            let started = ContinuousClock.now
            // Image erase (group 1, command 5), SMP v2 write, sequence 1, body {}; then an echo, sequence 2.
            _ = try await harness.bluez(
                Self.characteristic, Self.gatt, "WriteValue", [.bytes([0x0A, 0x00, 0x00, 0x01, 0x00, 0x01, 0x01, 0x05, 0xA0]), command])
            _ = try await harness.bluez(Self.characteristic, Self.gatt, "WriteValue", [.bytes(Self.echo("behind it", sequence: 2)), command])
            try await waitUntil("both answers", seconds: 60) { Self.notifications(recorder).count >= 2 }
            let elapsed = started.duration(to: .now)
            let answers = Self.notifications(recorder)
            #expect(answers.map { $0[6] } == [1, 2], "answered in order: \(answers)")
            #expect(answers.first?.prefix(8) == [0x0B, 0x00, 0x00, 0x01, 0x00, 0x01, 0x01, 0x05], "the erase answered: \(answers)")
            #expect(elapsed >= .milliseconds(1600), "answered after \(elapsed), before the erase could have ended")
            let device = try #require(await harness.simulator.device(at: SimulatorHarness.firstDevice))
            #expect(await device.smpDevice?.erases == 1)
        }
    }

    @Test func aDeviceWhoseImageCannotBeReadStopsTheStart() async throws {
        var configuration = Self.configuration()
        configuration.devices[0].smp?.image = Self.fixtures.appendingPathComponent("body.bin").path
        let bus = try await DBusPrivateBus.start()
        defer { bus.stop() }
        await #expect(throws: SMPServiceConfiguration.ImageRefused.self) {
            _ = try await BlueZSimulator.start(configuration: configuration, bus: .address(bus.address))
        }
    }
}
