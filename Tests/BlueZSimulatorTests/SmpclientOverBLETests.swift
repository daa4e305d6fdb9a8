import BlueZSimulator
import BlueZTestSupport
import Crypto
import Foundation
import SMPDeviceModel
import Testing
import TetherTestSupport

/// smpclient 7.3.0 (PyPI, Intercreate's SMP client; pinned by scripts/setup/smpclient-venv.sh with bleak 3.1.0 under it)
/// drives the simulated device's SMP service over BLE with smpclient_ble.py: bleak on the private bus, tether-sim
/// (in this process) as bluetoothd. A third-party client must get from the simulator what it gets from a Zephyr device:
/// scan, connect, MTU from AcquireWrite, MCUmgr parameters, echo, image state, and an upload of an image imgtool signs
/// now, in requests of buf_size split into writes of MTU − 3 that the device reassembles. The test then reads the
/// device model itself: the secondary slot holds the file byte for byte, with the SHA256 TLV smpclient read from it.
///
/// Needs python3 with venv and, on the first run, PyPI. Skipped without python3 or with TETHER_SKIP_SMPCLIENT=1,
/// unless TETHER_REQUIRE_SMPCLIENT=1: then a missing python3 or venv fails it.
@Suite struct SmpclientOverBLETests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let fixtures = root.appendingPathComponent("Tests/MCUbootImageTests/Fixtures")
    static let python = PinnedPythonTools.python
    static let enabled = PinnedPythonTools.smpclientEnabled

    typealias Slot = SmpclientSlot

    struct Transcript: Decodable {
        var imageHash: String
        var writeSize: Int
        var maxRequest: Int
        var echoMatches: Bool
        var before: [Slot]
        var offsets: [Int]
        var uploaded: [Slot]
    }

    static func venvTool(_ script: String) async throws -> String { try await PinnedPythonTools.tool(script) }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test(.enabled(if: enabled), .timeLimit(.minutes(15)))
    func smpclientEchoesListsAndUploadsOverBLE() async throws {
        try #require(Self.python != nil, "TETHER_REQUIRE_SMPCLIENT=1 but there is no python3")
        let python = try await Self.venvTool("smpclient-venv.sh")
        let imgtool = try await Self.venvTool("imgtool-venv.sh")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("smp-ble-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // The new image: 24,000 bytes of body signed now by imgtool with the fixtures' Ed25519 key, version 3.1.4+1.
        let body = directory.appendingPathComponent("body.bin")
        try Data((0..<24_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }).write(to: body)
        let image = directory.appendingPathComponent("new.img")
        let signed = try await ChildProcess.run(
            imgtool,
            [
                "sign", "--slot-size", "0x60000", "-k", Self.fixtures.appendingPathComponent("keys/ed25519.pem").path, "-H", "0x200",
                "--pad-header", "-v", "3.1.4+1", body.path, image.path,
            ], timeout: .seconds(120))
        try #require(signed.status == 0, "imgtool sign: \(signed.standardError)")
        let imageBytes = [UInt8](try Data(contentsOf: image))

        // The device runs the committed fixture ed25519-hash.img (make-images.sh: -v 1.2.3+4); buf_size 512 on an MTU of
        // 247 makes every upload request two writes (244 + the rest) that the device must reassemble.
        let factoryPath = Self.fixtures.appendingPathComponent("ed25519-hash.img").path
        let factory = try #require(SlotImage([UInt8](try Data(contentsOf: URL(fileURLWithPath: factoryPath)))))
        var device = DeviceConfiguration(address: "C0:54:45:00:00:07")
        device.name = "Tether-SMP"
        device.smp = SMPServiceConfiguration(image: factoryPath, bufSize: 512, bufCount: 4)
        var configuration = SimulatorConfiguration(devices: [device], seed: 5)
        configuration.link.mtu = 247

        try await SimulatedBlueZ.with(configuration) { simulated in
            let script = Self.root.appendingPathComponent("Tests/BlueZSimulatorTests/smpclient_ble.py").path
            let environment = ChildProcess.environment(["DBUS_SYSTEM_BUS_ADDRESS": simulated.bus.address, "PYTHONWARNINGS": "ignore"])
            let result = try await ChildProcess.run(
                python, [script, "C0:54:45:00:00:07", image.path], environment: environment, timeout: .seconds(600))
            try #require(result.status == 0, "smpclient_ble.py: \(result.standardError)")
            let transcript = try JSONDecoder().decode(Transcript.self, from: Data(try #require(result.lines.last).utf8))

            // smpclient took MTU − 3 from BlueZ's AcquireWrite and buf_size from the MCUmgr parameters.
            #expect(transcript.writeSize == 244)
            #expect(transcript.maxRequest == 512)
            #expect(transcript.echoMatches)
            #expect(transcript.before == [
                Slot(slot: 0, version: "1.2.3.4", hash: Self.hex(factory.hash), active: true, confirmed: true, pending: false, permanent: false)
            ])
            #expect(transcript.offsets.last == imageBytes.count)
            #expect(transcript.offsets.count > 40, "buf_size 512 should split \(imageBytes.count) bytes into many requests")
            #expect(transcript.uploaded.last == Slot(
                slot: 1, version: "3.1.4.1", hash: transcript.imageHash, active: false, confirmed: false, pending: false, permanent: false))

            // What the device model ended up with, read from the model itself.
            let simulatedDevice = try #require(await simulated.simulator.device(at: SimulatedBlueZ.devicePath("C0:54:45:00:00:07")))
            let model = try #require(await simulatedDevice.smpDevice)
            let secondary = try #require(model.slots.secondary)
            #expect(Array(SHA256.hash(data: secondary.bytes)) == Array(SHA256.hash(data: imageBytes)))
            #expect(Self.hex(secondary.hash) == transcript.imageHash)
            #expect(model.slots.primary.hash == factory.hash)
            // Every request was reassembled from its writes: none dropped.
            let server = try #require(await simulatedDevice.smp)
            #expect(server.writesDropped == 0)
            #expect(server.requestsAnswered >= transcript.offsets.count + 3)
        }
    }
}
