import Foundation
import SMPDeviceModel
import SMPUDPDevice
import Testing
import TetherTestSupport

/// smpclient 7.3.0 and smpmgr 0.19.1 (PyPI, Intercreate's SMP client and CLI; pinned by scripts/setup/smpclient-venv.sh)
/// drive the simulated device over UDP with smpclient_udp.py: the device must answer a third-party client the way a
/// Zephyr device does, through the whole test-then-confirm cycle, with an image imgtool signs now.
///
/// smpclient's UDP transport always talks to port 1337, so each run binds its own loopback address 127.x.y.z:1337.
/// Needs python3 with venv and, on the first run, PyPI. Skipped without python3 or with TETHER_SKIP_SMPCLIENT=1,
/// unless TETHER_REQUIRE_SMPCLIENT=1: then a missing python3 or venv fails it.
@Suite struct SmpclientOverUDPTests {
    static let python = PinnedPythonTools.python
    static let enabled = PinnedPythonTools.smpclientEnabled

    typealias Slot = SmpclientSlot

    struct Transcript: Decodable {
        struct Command: Decodable {
            var status: Int
            var output: String
        }
        var imageHash: String
        var echo: String
        var before: [Slot]
        var offsets: [Int]
        var uploaded: [Slot]
        var marked: [Slot]
        var afterReset: [Slot]
        var smpmgrConfirm: Command
        var confirmed: [Slot]
    }

    static func venvTool(_ script: String) async throws -> String { try await PinnedPythonTools.tool(script) }

    @Test(.enabled(if: enabled), .timeLimit(.minutes(15)))
    func smpclientUploadsTestsResetsAndConfirms() async throws {
        try #require(Self.python != nil, "TETHER_REQUIRE_SMPCLIENT=1 but there is no python3")
        let python = try await Self.venvTool("smpclient-venv.sh")
        let imgtool = try await Self.venvTool("imgtool-venv.sh")
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        // The new image: 20,000 bytes of body signed now by imgtool with the fixtures' Ed25519 key, version 2.0.0+7.
        let body = directory.appendingPathComponent("body.bin")
        try Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }).write(to: body)
        let image = directory.appendingPathComponent("new.img")
        let signed = try await ChildProcess.run(
            imgtool,
            [
                "sign", "--slot-size", "0x60000", "-k", Fixtures.directory.appendingPathComponent("keys/ed25519.pem").path, "-H", "0x200",
                "--pad-header", "-v", "2.0.0+7", body.path, image.path,
            ], timeout: .seconds(120))
        try #require(signed.status == 0, "imgtool sign: \(signed.standardError)")

        // The device runs the committed fixture ed25519-hash.img (make-images.sh: -v 1.2.3+4); buf_size 512 makes
        // smpclient (given the matching MTU, see smpclient_udp.py) send the image in about 45 chunks.
        let factory = try #require(SlotImage(try Fixtures.image("ed25519-hash")))
        let host = "127.\(Int.random(in: 1...254)).\(Int.random(in: 1...254)).\(Int.random(in: 2...254))"
        let server = try SMPUDPDeviceServer(
            device: SMPDevice(configuration: .init(bufferSize: 512, bufferCount: 4), factoryImage: factory), host: host, port: 1337)
        server.start()
        defer { server.stop() }

        let script = Fixtures.repositoryRoot.appendingPathComponent("Tests/SMPDeviceModelTests/smpclient_udp.py").path
        let result = try await ChildProcess.run(python, [script, host, image.path, "512"], timeout: .seconds(600))
        try #require(result.status == 0, "smpclient_udp.py: \(result.standardError)")
        let transcript = try JSONDecoder().decode(Transcript.self, from: Data(try #require(result.lines.last).utf8))
        let newHash = transcript.imageHash
        let oldHash = factory.hash.map { String(format: "%02x", $0) }.joined()

        #expect(transcript.echo == "tether")
        // Zephyr's version string: major.minor.revision and .build when it is not 0 (img_mgmt_ver_str).
        #expect(transcript.before == [Slot(slot: 0, version: "1.2.3.4", hash: oldHash, active: true, confirmed: true, pending: false, permanent: false)])
        let size = try Data(contentsOf: image).count
        #expect(transcript.offsets.last == size)
        #expect(transcript.offsets.count > 10, "buf_size 512 should split \(size) bytes into many chunks: \(transcript.offsets)")
        // The state's hash is the SHA256 TLV smpclient's own MCUboot parser reads from the file.
        #expect(transcript.uploaded.count == 2)
        #expect(transcript.uploaded.last == Slot(slot: 1, version: "2.0.0.7", hash: newHash, active: false, confirmed: false, pending: false, permanent: false))
        #expect(transcript.marked.last?.pending == true && transcript.marked.last?.permanent == false)
        // After the reset the new image runs in test; the old one is what MCUboot would go back to.
        #expect(transcript.afterReset == [
            Slot(slot: 0, version: "2.0.0.7", hash: newHash, active: true, confirmed: false, pending: false, permanent: false),
            Slot(slot: 1, version: "1.2.3.4", hash: oldHash, active: false, confirmed: true, pending: false, permanent: false),
        ])
        #expect(transcript.smpmgrConfirm.status == 0, "\(transcript.smpmgrConfirm.output)")
        #expect(transcript.confirmed.first == Slot(slot: 0, version: "2.0.0.7", hash: newHash, active: true, confirmed: true, pending: false, permanent: false))
        // Confirmed is permanent: another reset keeps the new image.
        let afterAnotherReset = server.withDevice { device in
            device.reset()
            return device.slots.primary.version
        }
        #expect(afterAnotherReset == "2.0.0.7")
    }
}
