import Foundation
import SMPDeviceModel
import SMPUDPDevice
import Testing
import TetherTestSupport

/// The built `tether` binary's `firmware list/echo/test/reset/confirm/erase --udp` against the simulated device.
@Suite struct FirmwareCLIOverUDPTests {
    static func tether(_ arguments: [String]) async throws -> ChildProcess.Result {
        try await ChildProcess.run(try BuiltProducts.require("tether"), ["firmware"] + arguments, timeout: .seconds(120))
    }

    @Test func listShowsTheSlotsAsTableAndJSON() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let hash = SimulatedDevice.hex(try #require(SlotImage(try SimulatedDevice.image("ed25519-hash"))).hash)
        let table = try await Self.tether(["list", "--udp", "127.0.0.1:\(server.port)"])
        #expect(table.status == 0, "\(table.standardError)")
        #expect(table.lines == ["IMAGE  SLOT  VERSION  FLAGS                      HASH", "0      0     1.2.3.4  active,confirmed,bootable  \(hash)"])
        let json = try await Self.tether(["list", "--udp", "127.0.0.1:\(server.port)", "--json"])
        let slots = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]])
        #expect(slots.count == 1)
        #expect(slots.first?["hash"] as? String == hash && slots.first?["version"] as? String == "1.2.3.4")
        #expect(slots.first?["active"] as? Bool == true && slots.first?["pending"] as? Bool == false)
    }

    @Test func echoTestResetConfirmAndErase() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let udp = ["--udp", "127.0.0.1:\(server.port)"]
        let echo = try await Self.tether(["echo"] + udp + ["hello device"])
        #expect(echo.status == 0 && echo.lines == ["hello device"], "\(echo.standardError)")

        // The running image cannot be marked for test: the device's refusal is exit status 1 with its name.
        let running = SimulatedDevice.hex(try #require(SlotImage(try SimulatedDevice.image("ed25519-hash"))).hash)
        let refused = try await Self.tether(["test"] + udp + [running])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("IMG_MGMT_ERR_IMAGE_SETTING_TEST_TO_ACTIVE_DENIED"), "\(refused.standardError)")
        let unknown = try await Self.tether(["test"] + udp + [String(repeating: "ab", count: 32)])
        #expect(unknown.status == 1 && unknown.standardError.contains("IMG_MGMT_ERR_HASH_NOT_FOUND"), "\(unknown.standardError)")

        let erase = try await Self.tether(["erase"] + udp)
        #expect(erase.status == 0, "\(erase.standardError)")
        let confirm = try await Self.tether(["confirm"] + udp)
        #expect(confirm.status == 0 && confirm.standardOutput.contains("active,confirmed"), "\(confirm.standardError)")
        let reset = try await Self.tether(["reset"] + udp)
        #expect(reset.status == 0, "\(reset.standardError)")
        #expect(server.withDevice { $0.slots.resets } == 1)
    }

    @Test func badArgumentsAreUsageErrors() async throws {
        let badAddress = try await Self.tether(["list", "--udp", "host:0"])
        #expect(badAddress.status == 64 || badAddress.status == 2, "\(badAddress.standardError)")
        let badHash = try await Self.tether(["test", "--udp", "127.0.0.1", "abc"])
        #expect(badHash.status == 64 || badHash.status == 2, "\(badHash.standardError)")
    }
}

/// `tether firmware update --udp` as a technician runs it: exit 0 when the new image runs confirmed, 6 on a revert,
/// 1 for an untrusted image (nothing sent).
@Suite struct FirmwareUpdateCLITests {
    static let trusted = SimulatedDevice.fixtures.appendingPathComponent("trusted").path
    static let image = SimulatedDevice.fixtures.appendingPathComponent("ecdsa-p256-hash.img").path

    @Test func updateExitsZeroWhenTheNewImageRunsConfirmed() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let result = try await FirmwareCLIOverUDPTests.tether(
            ["update", "--udp", "127.0.0.1:\(server.port)", "--keys", Self.trusted, "--prove-for", "1", Self.image])
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(result.lines.last == "done: 0.9.12.3 runs, confirmed")
        #expect(result.lines.contains("proving: the new image must keep running for 1 s before it is confirmed"), "\(result.lines)")
        #expect(server.withDevice { $0.slots.primary.version } == "0.9.12.3")
        // A line per 10 %, with the rate once two confirmations are apart: "upload: 4096/50000 bytes (8 %), 1.2 kB/s, …".
        let uploads = result.lines.filter { $0.hasPrefix("upload: ") }
        #expect(uploads.count >= 2, "\(result.standardOutput)")
        #expect(uploads.allSatisfy { $0.wholeMatch(of: /upload: \d+\/\d+ bytes \(\d+ %\)(, [0-9.]+ kB\/s(, about .+ left)?)?/) != nil }, "\(uploads)")
        #expect(uploads.contains { $0.contains(" kB/s") }, "\(uploads)")
    }

    @Test func updateExitsSixOnARevert() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let newHash = try #require(SlotImage(try SimulatedDevice.image("ecdsa-p256-hash"))).hash
        server.withDevice { $0.crashingImages = [newHash] }
        let result = try await FirmwareCLIOverUDPTests.tether(
            ["update", "--udp", "127.0.0.1:\(server.port)", "--keys", Self.trusted, "--prove-for", "0", "--json", Self.image])
        #expect(result.status == 6, "\(result.standardOutput)\(result.standardError)")
        #expect(result.standardError.contains("the device reverted: it runs 1.2.3.4"), "\(result.standardError)")
        #expect(!result.standardOutput.contains(#""phase":"confirmed""#))
    }

    /// Two devices in one command: each updated in turn, its lines labelled, then a summary.
    @Test func severalDevicesAreUpdatedOneAfterAnother() async throws {
        let first = try SimulatedDevice.start()
        defer { first.stop() }
        let second = try SimulatedDevice.start()
        defer { second.stop() }
        let result = try await FirmwareCLIOverUDPTests.tether(
            ["update", "--udp", "127.0.0.1:\(first.port)", "--udp", "127.0.0.1:\(second.port)", "--keys", Self.trusted, "--prove-for", "0", Self.image])
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        for server in [first, second] {
            #expect(server.withDevice { $0.slots.primary.version } == "0.9.12.3")
            #expect(result.lines.contains("127.0.0.1:\(server.port): done: 0.9.12.3 runs, confirmed"), "\(result.lines)")
        }
        #expect(result.lines.last == "summary: 2 devices: 2 updated")
    }

    /// With --max-failures 1, a device that reverts stops the run: the next device is not sent a datagram.
    @Test func aRevertStopsTheRestAtTheLimit() async throws {
        let first = try SimulatedDevice.start()
        defer { first.stop() }
        let second = try SimulatedDevice.start()
        defer { second.stop() }
        let newHash = try #require(SlotImage(try SimulatedDevice.image("ecdsa-p256-hash"))).hash
        first.withDevice { $0.crashingImages = [newHash] }
        let result = try await FirmwareCLIOverUDPTests.tether(
            ["update", "--udp", "127.0.0.1:\(first.port)", "--udp", "127.0.0.1:\(second.port)", "--keys", Self.trusted,
             "--max-failures", "1", "--prove-for", "0", "--json", Self.image])
        #expect(result.status == 6, "\(result.standardOutput)\(result.standardError)")
        #expect(second.datagramsReceived == 0)
        #expect(result.lines.allSatisfy { $0.hasPrefix("{") }, "\(result.lines)")
        #expect(result.lines.filter { $0.contains(#""phase":"upload""#) }.allSatisfy { $0.contains(#""device":"127.0.0.1:\#(first.port)""#) })
        #expect(result.lines.last == #"{"devices":2,"summary":{"failed":0,"notTried":1,"reverted":1,"updated":0}}"#)
    }

    @Test func anUntrustedImageExitsOneAndSendsNothing() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let untrusted = SimulatedDevice.fixtures.appendingPathComponent("untrusted-ed25519.img").path
        let result = try await FirmwareCLIOverUDPTests.tether(["update", "--udp", "127.0.0.1:\(server.port)", "--keys", Self.trusted, untrusted])
        #expect(result.status == 1)
        #expect(result.standardError.contains("refused the image before sending it"), "\(result.standardError)")
        #expect(server.datagramsReceived == 0)
    }
}
