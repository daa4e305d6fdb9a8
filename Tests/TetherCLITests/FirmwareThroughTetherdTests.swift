@testable import BlueZSimulator
import Foundation
import Testing
import TetherTestSupport

/// `tether firmware update DEVICE IMAGE` and `tether firmware updates` against the built tetherd on a private bus, with
/// tether-sim's device offering MCUmgr's SMP service beside its Tether link (factory image ed25519-hash.img, 1.2.3+4)
/// and tetherd trusting the fixtures' `trusted/` keys.
@Suite("tether firmware through tetherd", .serialized, .timeLimit(.minutes(6)))
struct FirmwareThroughTetherdTests {
    static func fixture(_ name: String) -> String { TetherdSystem.firmwareFixtures + "/" + name }

    /// The images tetherd keeps in its state directory's `firmware/` (FirmwareUpdates rule 2).
    static func keptImages(_ system: TetherdSystem) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: system.directory + "/firmware")) ?? []).sorted()
    }

    @Test("an untrusted image is refused with exit 1; a trusted one is uploaded, tested and confirmed, and the device given back")
    func updateThroughTetherd() async throws {
        var device = TetherdEndToEndTests.device(7, pairing: .justWorks)
        device.smp = SMPServiceConfiguration(image: Self.fixture("ed25519-hash.img"))
        let system = try await TetherdSystem.start(devices: [device])
        do {
            let paired = try await system.tether(["pair", "C0:54:45:00:10:07"])
            #expect(paired.status == 0, "\(paired.standardError)")
            try #require(try await system.connected("TE00000007"), "\(system.log("tetherd.log"))")

            let refused = try await system.tether(["firmware", "update", "TE00000007", Self.fixture("untrusted-ed25519.img")])
            #expect(refused.status == 1, "\(refused.standardError)")
            #expect(refused.standardError.contains("refused the image before sending it"), "\(refused.standardError)")

            let update = try await system.tether(
                ["firmware", "update", "TE00000007", Self.fixture("ed25519-full-seccnt.img"), "--prove-for", "1", "--json"])
            #expect(update.status == 0, "\(update.standardError)\n\(system.log("tetherd.log"))")
            let lines = update.standardOutput.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let phases = lines.compactMap { $0["phase"] as? String }
            #expect(phases.first == "verified" && phases.contains("upload") && phases.contains("reset") && phases.last == "confirmed", "\(phases)")
            #expect(lines.last?["outcome"] as? String == "confirmed" && lines.last?["version"] as? String == "2.0.1.99", "\(lines)")

            let history = try #require(try await system.json(["firmware", "updates"]) as? [[String: Any]])
            #expect(history.count == 1, "\(history)")  // the refusal left no record: it was never started
            #expect(history.first?["outcome"] as? String == "confirmed" && history.first?["phase"] as? String == "finished", "\(history)")
            #expect(history.first?["address"] as? String == "C0:54:45:00:10:07")
            // Given back: its link session has it again.
            #expect(try await system.connected("TE00000007"), "\(system.log("tetherd.log"))")
            // tetherd's copy of the image goes once no unfinished update names it.
            #expect(try await system.eventually { Self.keptImages(system).isEmpty }, "\(Self.keptImages(system))")
            // The outcome reached the backend through the outbox, naming the device by its serial; the registry
            // shows the device on the new image, confirmed.
            #expect(try await system.eventually { ((try? await system.firmwareUpdatesOnServer()) ?? []).count == 1 }, "\(system.log("tetherd.log"))")
            let onServer = try #require(try await system.firmwareUpdatesOnServer().first?["document"] as? [String: Any])
            #expect(onServer["uid"] as? String == history.first?["uid"] as? String, "\(onServer) \(history)")
            #expect(onServer["outcome"] as? String == "confirmed" && onServer["serial"] as? String == "TE00000007", "\(onServer)")
            #expect(onServer["address"] as? String == "C0:54:45:00:10:07" && onServer["attempts"] as? Int == 1, "\(onServer)")
            #expect(onServer["imageVersion"] as? String == history.first?["image_version"] as? String, "\(onServer) \(history)")
            let devices = try #require(try await system.json(["devices"]) as? [[String: Any]])
            let updated = devices.first { $0["serial"] as? String == "TE00000007" }
            #expect(updated?["running_image_version"] as? String == onServer["imageVersion"] as? String, "\(devices)")
            #expect(updated?["running_image_confirmed"] as? Bool == true && updated?["running_image_update"] as? String == onServer["uid"] as? String, "\(devices)")
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test("two devices whose new image crashes at boot: each reverted (exit 6), one after another, with a summary")
    func revertsThroughTetherd() async throws {
        let devices = [10, 11].map { number in
            var device = TetherdEndToEndTests.device(number, pairing: .justWorks)
            device.smp = SMPServiceConfiguration(image: Self.fixture("ed25519-hash.img"))
            return device
        }
        let system = try await TetherdSystem.start(devices: devices)
        do {
            let image = Self.fixture("ed25519-full-seccnt.img")
            let inspected = try await system.tether(["firmware", "inspect", "--keys", TetherdSystem.firmwareFixtures + "/trusted", image, "--json"])
            let hashText = try #require((try JSONSerialization.jsonObject(with: Data(inspected.standardOutput.utf8)) as? [String: Any])?["hash"] as? String)
            let hash = stride(from: 0, to: hashText.count, by: 2).map { offset -> UInt8 in
                let start = hashText.index(hashText.startIndex, offsetBy: offset)
                return UInt8(hashText[start..<hashText.index(start, offsetBy: 2)], radix: 16)!
            }
            for device in system.simulator.devices { await device.withSMPDevice { $0.crashingImages = [hash] } }
            for address in ["C0:54:45:00:10:0A", "C0:54:45:00:10:0B"] {
                #expect(try await system.tether(["pair", address]).status == 0)
            }
            try #require(
                try await system.eventually {
                    let listed = (try? await system.json(["devices"])) as? [[String: Any]] ?? []
                    return listed.count { $0["state"] as? String == "connected" && $0["serial"] != nil } == 2
                }, "\(system.log("tetherd.log"))")

            let update = try await system.tether(["firmware", "update", "TE00000010", "TE00000011", image, "--prove-for", "0", "--max-failures", "2"])
            #expect(update.status == 6, "\(update.standardOutput)\n\(update.standardError)\n\(system.log("tetherd.log"))")
            #expect(update.standardError.contains("TE00000010: the device reverted: it runs 1.2.3.4"), "\(update.standardError)")
            #expect(update.standardOutput.contains("summary: 2 devices: 0 updated, 2 reverted"), "\(update.standardOutput)")
            let history = try #require(try await system.json(["firmware", "updates"]) as? [[String: Any]])
            #expect(history.count == 2 && history.allSatisfy { $0["outcome"] as? String == "reverted" }, "\(history)")
            // Each revert reached the backend with its reason.
            #expect(try await system.eventually { ((try? await system.firmwareUpdatesOnServer()) ?? []).count == 2 }, "\(system.log("tetherd.log"))")
            let onServer = try await system.firmwareUpdatesOnServer().compactMap { $0["document"] as? [String: Any] }
            #expect(Set(onServer.compactMap { $0["serial"] as? String }) == ["TE00000010", "TE00000011"], "\(onServer)")
            #expect(onServer.allSatisfy { $0["outcome"] as? String == "reverted" && ($0["message"] as? String)?.isEmpty == false }, "\(onServer)")
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test(
        "an update cut by tetherd restarting (SIGTERM) or killed (SIGKILL) is resumed by the new tetherd (attempt 2), and the CLI follows it to its end",
        arguments: [false, true])
    func resumesAfterARestart(killing: Bool) async throws {
        var device = TetherdEndToEndTests.device(killing ? 9 : 8, pairing: .justWorks)
        device.smp = SMPServiceConfiguration(image: Self.fixture("ed25519-hash.img"))
        let system = try await TetherdSystem.start(devices: [device])
        do {
            let (address, serial) = killing ? ("C0:54:45:00:10:09", "TE00000009") : ("C0:54:45:00:10:08", "TE00000008")
            #expect(try await system.tether(["pair", address]).status == 0)
            func latest() async throws -> [String: Any]? {
                ((try? await system.json(["firmware", "updates"])) as? [[String: Any]])?.first
            }
            try #require(try await system.connected(serial), "\(system.log("tetherd.log"))")
            let cli = Task { try await system.tether(["firmware", "update", serial, Self.fixture("ed25519-full-seccnt.img"), "--prove-for", "15"]) }
            try #require(try await system.eventually { try await latest()?["phase"] as? String == "proving" }, "\(system.log("tetherd.log"))")
            // The unfinished update's image, kept for the resume.
            #expect(Self.keptImages(system).count == 1, "\(Self.keptImages(system))")

            // SIGKILL: the journal's last durable write (phase proving) is all the new tetherd has.
            try await system.restartDaemon(killing: killing)
            let followed = try await cli.value
            #expect(followed.status == 0, "\(followed.standardError)\n\(system.log(system.daemonLog))")
            #expect(followed.standardOutput.contains("done: 2.0.1.99 runs, confirmed"), "\(followed.standardOutput)")
            // The first tetherd left it unfinished, proving; the second resumed it and confirmed it.
            let finished = try await system.eventually {
                let update = try await latest()
                return update?["outcome"] as? String == "confirmed" && update?["attempts"] as? Int == 2
            }
            let last = try await latest()
            #expect(finished, "\(String(describing: last))\n\(system.log(system.daemonLog))")
            #expect(system.wholeLog(system.daemonLog).contains("firmware update resumed"))
            #expect(try await system.eventually { Self.keptImages(system).isEmpty }, "\(Self.keptImages(system))")
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    /// An image of `kib` KiB of pseudo-random body (nothing along the way could compress it), signed by imgtool (the
    /// pinned PyPI tool, not Tether's code) with the fixtures' Ed25519 key, which tetherd trusts; in `directory`.
    static func signedImage(kib: Int, in directory: String) async throws -> String {
        let imgtool = try await PinnedPythonTools.tool("imgtool-venv.sh")
        var generator = SystemRandomNumberGenerator()
        let body = directory + "/body.bin"
        let image = directory + "/large.img"
        try Data((0..<(kib * 1024)).map { _ in UInt8.random(in: .min ... .max, using: &generator) }).write(to: URL(fileURLWithPath: body))
        let signed = try await ChildProcess.run(
            imgtool,
            ["sign", "--slot-size", "0x60000", "-k", TetherdSystem.firmwareFixtures + "/keys/ed25519.pem", "-H", "0x200", "--pad-header",
             "-v", "3.0.0+7", body, image],
            timeout: .seconds(120))
        try #require(signed.status == 0, "imgtool sign: \(signed.standardError)")
        return image
    }

    @Test("an upload cut by a SIGKILLed tetherd goes on under the next tetherd from the device's own offset: one erase, the upload not started again")
    func resumesAnUploadAfterAKill() async throws {
        var device = TetherdEndToEndTests.device(10, pairing: .justWorks)
        device.smp = SMPServiceConfiguration(image: Self.fixture("ed25519-hash.img"))
        // A slow flash (85 ms a page erase, 100 ms a KiB written): the 192 KiB upload takes about 20 s, so the kill
        // lands in it whatever the machine's load (with nRF52840 timings it was over before a poll saw it).
        device.smp?.flash = .init(eraseMillisecondsPerSector: 85, writeMicrosecondsPerKiB: 100_000)
        let system = try await TetherdSystem.start(devices: [device])
        do {
            let (address, serial) = ("C0:54:45:00:10:0A", "TE00000010")
            let image = try await Self.signedImage(kib: 192, in: system.directory)
            #expect(try await system.tether(["pair", address]).status == 0)
            func latest() async throws -> [String: Any]? {
                ((try? await system.json(["firmware", "updates"])) as? [[String: Any]])?.first
            }
            try #require(try await system.connected(serial), "\(system.log("tetherd.log"))")
            let cli = Task { try await system.tether(["firmware", "update", serial, image, "--prove-for", "1"]) }
            // The journal's first durable offset (every 32 KiB): the upload is well under way when tetherd dies.
            let underWay = try await system.eventually {
                let update = try await latest()
                return update?["phase"] as? String == "uploading" && (update?["bytes_acknowledged"] as? Int ?? 0) >= 32 * 1024
            }
            let atKill = try await latest()
            try #require(underWay, "\(String(describing: atKill))\n\(system.log("tetherd.log"))")
            let offsetAtKill = atKill?["bytes_acknowledged"] as? Int ?? 0
            try await system.restartDaemon(killing: true)

            let followed = try await cli.value
            #expect(followed.status == 0, "\(followed.standardError)\n\(system.log(system.daemonLog))")
            #expect(followed.standardOutput.contains("done: 3.0.0.7 runs, confirmed"), "\(followed.standardOutput)")
            let last = try await latest()
            #expect(last?["outcome"] as? String == "confirmed" && last?["attempts"] as? Int == 2, "\(String(describing: last))")
            // The device's own record of the upload: erased once, at its start, and the next tetherd's first request
            // answered with the device's offset (SMPDevice rule 2), so the upload went on rather than began again.
            let simulated = try #require(system.simulator.devices.first { $0.configuration.address == address })
            let smp = try #require(await simulated.smpDevice)
            #expect(smp.erases == 1, "erases \(smp.erases): the upload began again (journal offset at the kill \(offsetAtKill))")
            #expect(smp.offsetCorrections >= 1, "offset corrections \(smp.offsetCorrections)")
            #expect(smp.slots.primary.version == "3.0.0.7" || smp.slots.primary.version == "3.0.0+7", "\(smp.slots.primary.version)")
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test("list, test, confirm, reset and erase through tetherd on a device it serves; a refused command, a held device and an unknown one fail with the reason")
    func slotCommandsThroughTetherd() async throws {
        var device = TetherdEndToEndTests.device(12, pairing: .justWorks)
        device.smp = SMPServiceConfiguration(image: Self.fixture("ed25519-hash.img"))
        let system = try await TetherdSystem.start(devices: [device])
        do {
            let serial = "TE00000012"
            #expect(try await system.tether(["pair", "C0:54:45:00:10:0C"]).status == 0)
            try #require(try await system.connected(serial), "\(system.log("tetherd.log"))")
            func slots() async throws -> [[String: Any]] {
                let listed = try await system.tether(["firmware", "list", serial, "--json"])
                try #require(listed.status == 0, "\(listed.standardError)\n\(system.log("tetherd.log"))")
                return try #require(try JSONSerialization.jsonObject(with: Data(listed.standardOutput.utf8)) as? [[String: Any]])
            }
            func versions() async throws -> [String?] { try await slots().map { $0["version"] as? String } }
            let factory = try await slots()
            #expect(factory.count == 1 && factory.first?["version"] as? String == "1.2.3.4" && factory.first?["confirmed"] as? Bool == true, "\(factory)")
            let factoryHash = try #require(factory.first?["hash"] as? String)

            // An update holds the device while its image proves itself (8 s): a command meanwhile is busy, naming it.
            let updating = Task {
                try await system.tether(["firmware", "update", serial, Self.fixture("ed25519-full-seccnt.img"), "--prove-for", "8"])
            }
            try #require(try await system.eventually {
                ((try? await system.json(["firmware", "updates"])) as? [[String: Any]])?.first?["phase"] as? String == "proving"
            })
            let busy = try await system.tether(["firmware", "list", serial])
            #expect(busy.status == 1 && busy.standardError.contains("firmware update"), "\(busy.status) \(busy.standardError)")
            let update = try await updating.value
            #expect(update.status == 0, "\(update.standardError)")
            try #require(try await system.connected(serial), "\(system.log("tetherd.log"))")
            #expect(try await versions() == ["2.0.1.99", "1.2.3.4"])

            // Back to the factory image: marked for test (pending), which the device will not let be erased (exit 1
            // with its reason, the slot kept); then reset, the device comes back running it, on test.
            let test = try await system.tether(["firmware", "test", serial, factoryHash])
            #expect(test.status == 0 && test.standardOutput.contains("pending"), "\(test.standardOutput)\n\(test.standardError)")
            let refused = try await system.tether(["firmware", "erase", serial])
            #expect(refused.status == 1 && !refused.standardError.isEmpty, "\(refused.status) \(refused.standardError)")
            #expect(try await versions().count == 2)
            let reset = try await system.tether(["firmware", "reset", serial])
            #expect(reset.status == 0, "\(reset.standardError)")
            let simulated = try #require(system.simulator.devices.first { $0.configuration.address == "C0:54:45:00:10:0C" })
            #expect(try await system.eventually { await simulated.smpDevice?.slots.primary.version == "1.2.3.4" })
            try #require(try await system.eventually {
                let listed = (try? await slots()) ?? []
                return listed.first?["version"] as? String == "1.2.3.4" && listed.first?["confirmed"] as? Bool == false
            }, "\(system.log("tetherd.log"))")

            // Confirmed, the other image is no longer the fallback: erased.
            let confirm = try await system.tether(["firmware", "confirm", serial])
            #expect(confirm.status == 0 && confirm.standardOutput.contains("active,confirmed"), "\(confirm.standardOutput)\n\(confirm.standardError)")
            let erase = try await system.tether(["firmware", "erase", serial])
            #expect(erase.status == 0, "\(erase.standardError)")
            #expect(try await versions() == ["1.2.3.4"])
            #expect(await simulated.smpDevice?.slots.secondary == nil)

            // A bad hash is a usage error; an unknown device is not found.
            let bad = try await system.tether(["firmware", "test", serial, "abc"])
            #expect(bad.status == 2, "\(bad.standardError)")
            let unknown = try await system.tether(["firmware", "list", "TE99999999"])
            #expect(unknown.status == 5, "\(unknown.status) \(unknown.standardError)")
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }
}
