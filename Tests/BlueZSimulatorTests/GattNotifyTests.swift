import BlueZSimulator
import DBus
import Glibc
import LinkProtocol
import Testing
import TetherTestSupport

/// The firmware model behind the GATT objects: HELLO in, DEVICE_INFO out, on the fd and StartNotify paths.
@Suite(.serialized)
struct GattNotifyTests {
    /// Link protocol §7.1: HELLO minVersion 1, maxVersion 2, window 16.
    static let hello = FrameEncoder.frame(version: 1, type: 0x01, sequence: SequenceNumber(0), payload: [1, 2, 16])

    static func decodeFrames(_ packets: [[UInt8]]) throws -> [Frame] {
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        for packet in packets {
            decoder.append(packet)
            while let frame = try decoder.decode() { frames.append(frame) }
        }
        return frames
    }

    @Test func acquireNotifyAndAcquireWriteCarryFrames() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            let notify = try await harness.bluez(
                SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "AcquireNotify", [.variantDictionary([:])])
            let write = try await harness.bluez(
                SimulatorHarness.rx, "org.bluez.GattCharacteristic1", "AcquireWrite", [.variantDictionary([:])])
            #expect(notify.last == .uint16(247))
            #expect(write.last == .uint16(247))
            let notifyFD = try #require(notify.first?.fileDescriptorValue?.rawValue)
            let writeFD = try #require(write.first?.fileDescriptorValue?.rawValue)
            #expect(try await harness.property(SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "NotifyAcquired") == .bool(true))
            // Like real BlueZ (create_sock uses SOCK_NONBLOCK), the descriptors handed out are non-blocking.
            #expect(fcntl(notifyFD, F_GETFL) & O_NONBLOCK != 0)
            #expect(fcntl(writeFD, F_GETFL) & O_NONBLOCK != 0)

            // StartNotify and direct CCCD writes are refused while the fd owns the notifications.
            await #expect(throws: DBusError(name: "org.bluez.Error.NotPermitted", message: "")) {
                try await harness.bluez(SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "StartNotify")
            }
            await #expect(throws: DBusError(name: "org.bluez.Error.NotPermitted", message: "")) {
                try await harness.bluez(
                    SimulatorHarness.cccd, "org.bluez.GattDescriptor1", "WriteValue",
                    [.bytes([1, 0]), .variantDictionary([:])])
            }

            #expect(sendPacket(writeFD, Self.hello))
            var packets: [[UInt8]] = []
            var frames: [Frame] = []
            while frames.isEmpty, let packet = try await receivePacket(notifyFD) {
                packets.append(packet)
                frames = try Self.decodeFrames(packets)
            }
            let info = try #require(frames.first)
            #expect(info.header.type == 0x02)  // DEVICE_INFO
            #expect(packets.allSatisfy { $0.count <= 244 })

            // Closing the client's end ends the acquisition, as in BlueZ.
            notify.first?.fileDescriptorValue?.close()
            try await recorder.waitFor("NotifyAcquired=false") {
                $0.changes("NotifyAcquired", to: .bool(false), at: SimulatorHarness.tx)
            }
            write.first?.fileDescriptorValue?.close()
            try await recorder.waitFor("WriteAcquired=false") {
                $0.changes("WriteAcquired", to: .bool(false), at: SimulatorHarness.rx)
            }
        }
    }

    @Test func startNotifySendsValueChangesPerSession() async throws {
        try await SimulatorHarness.with { harness in
            try await harness.discover()
            try await harness.connect()
            let recorder = try await harness.record()
            _ = try await harness.bluez(SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "StartNotify")
            try await recorder.waitFor("Notifying=true") {
                $0.changes("Notifying", to: .bool(true), at: SimulatorHarness.tx)
            }
            _ = try await harness.bluez(
                SimulatorHarness.rx, "org.bluez.GattCharacteristic1", "WriteValue",
                [.bytes(Self.hello), .variantDictionary(["type": .string("command")])])
            var frames: [Frame] = []
            try await waitUntil("DEVICE_INFO by PropertiesChanged", seconds: 30) {
                let values = recorder.signals.filter { $0.path == SimulatorHarness.tx }.compactMap {
                    $0.changedProperties?["Value"]?.bytesValue
                }
                frames = try Self.decodeFrames(values)
                return !frames.isEmpty
            }
            #expect(frames.first?.header.type == 0x02)

            // RX is write-without-response only: a Write Request is not supported.
            await #expect(throws: DBusError(name: "org.bluez.Error.NotSupported", message: "")) {
                try await harness.bluez(
                    SimulatorHarness.rx, "org.bluez.GattCharacteristic1", "WriteValue",
                    [.bytes(Self.hello), .variantDictionary(["type": .string("request")])])
            }
            _ = try await harness.bluez(SimulatorHarness.tx, "org.bluez.GattCharacteristic1", "StopNotify")
            try await recorder.waitFor("Notifying=false") {
                $0.changes("Notifying", to: .bool(false), at: SimulatorHarness.tx)
            }
        }
    }
}
