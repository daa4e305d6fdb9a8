import Crypto
import Foundation
import SMP
import SMPDeviceModel
import SMPUDPDevice
import Testing
import TetherFirmware
import TetherTestSupport

/// Tether's SMP UDP transport (SMPUDPSession, FirmwareUDPClient) against the simulated device over real sockets.
/// The client blocks, so each test runs it on a thread of its own.
@Suite struct FirmwareUDPClientTests {
    @Test func listsTestsResetsAndConfirms() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let new = try SimulatedDevice.image("ecdsa-p256-hash")
        let newHash = try #require(SlotImage(new)).hash
        // The upload is the device model's job here (the uploader has its own tests); this suite is about the commands.
        try server.withDevice { device in
            var sequence: UInt8 = 0
            var offset = 0
            while offset < new.count {
                let end = min(offset + 400, new.count)
                let first = offset == 0 ? SMPUploadChunk.FirstChunkFields(length: new.count, sha: Array(SHA256.hash(data: new))) : nil
                sequence &+= 1
                let handled = device.handle(SMPRequest.imageUpload(.init(offset: offset, data: new[offset..<end], first: first)).encoded(version: .v2, sequence: sequence))
                let answer = try #require(handled)
                offset = try SMPUploadResponse(body: try SMPResponse(message: answer).body).offset
            }
        }
        let target = UDPTarget(host: "127.0.0.1", port: server.port)
        let (before, marked, after, confirmed, echo) = try await onOwnThread {
            let client = try FirmwareUDPClient(target: target)
            let echo = try client.echo("ping")
            let before = try client.imageState()
            let marked = try client.test(hash: newHash)
            try client.reset()
            let after = try client.imageState()
            let confirmed = try client.confirm(hash: nil)
            return (before, marked, after, confirmed, echo)
        }
        #expect(echo == "ping")
        #expect(before.images.map(\.version) == ["1.2.3.4", "0.9.12.3"])
        #expect(marked.images[1].pending)
        #expect(after.images[0].hash == newHash && after.images[0].active && !after.images[0].confirmed)
        #expect(confirmed.images[0].hash == newHash && confirmed.images[0].confirmed)
    }

    @Test func aLostAnswerIsRetried() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        server.dropAnswers(2)
        let target = UDPTarget(host: "127.0.0.1", port: server.port)
        var configuration = SMPUDPSession.configuration()
        configuration.timeout = .milliseconds(200)
        let frozen = configuration
        let text = try await onOwnThread { try FirmwareUDPClient(target: target, configuration: frozen).echo("again") }
        #expect(text == "again")
    }

    @Test func aDeviceThatNeverAnswersTimesOut() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        server.dropAnswers(100)
        let target = UDPTarget(host: "127.0.0.1", port: server.port)
        var configuration = SMPUDPSession.configuration()
        configuration.timeout = .milliseconds(100)
        configuration.retries = 2
        let frozen = configuration
        let result = try await onOwnThread { () -> FirmwareTransportError? in
            do {
                _ = try FirmwareUDPClient(target: target, configuration: frozen).imageState()
                return nil
            } catch {
                return error as? FirmwareTransportError
            }
        }
        #expect(result == .client(.timedOut))
    }

    @Test func aDeviceErrorIsReportedInEitherForm() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let target = UDPTarget(host: "127.0.0.1", port: server.port)
        let running = try #require(SlotImage(try SimulatedDevice.image("ed25519-hash"))).hash
        let errors = try await onOwnThread { () -> [FirmwareTransportError?] in
            var errors: [FirmwareTransportError?] = []
            for version in [SMPVersion.v2, .v1] {
                do {
                    _ = try FirmwareUDPClient(target: target, configuration: SMPUDPSession.configuration(version: version)).test(hash: running)
                    errors.append(nil)
                } catch {
                    errors.append(error as? FirmwareTransportError)
                }
            }
            return errors
        }
        #expect(errors[0] == .device(SMPDeviceError(group: SMPGroup.image, rc: ImageManagementError.IMAGE_SETTING_TEST_TO_ACTIVE_DENIED.rawValue)))
        #expect(errors[1] == .device(SMPDeviceError(rc: MCUmgrError.EBADSTATE.rawValue)))
    }

    @Test(arguments: [
        ("host", UDPTarget(host: "host")), ("10.0.0.2:1400", UDPTarget(host: "10.0.0.2", port: 1400)),
        ("[::1]:99", UDPTarget(host: "::1", port: 99)), ("[fe80::1]", UDPTarget(host: "fe80::1")), ("::1", UDPTarget(host: "::1")),
    ])
    func targetsParse(_ text: String, _ expected: UDPTarget) {
        #expect(UDPTarget(parsing: text) == expected)
    }

    @Test(arguments: ["", ":1337", "host:0", "host:70000", "host:x", "[::1", "[::1]x"])
    func badTargetsAreRefused(_ text: String) {
        #expect(UDPTarget(parsing: text) == nil)
    }
}
