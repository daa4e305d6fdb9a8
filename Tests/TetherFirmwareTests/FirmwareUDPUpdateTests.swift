import Foundation
import MCUbootImage
import SMP
import SMPDeviceModel
import SMPUDPDevice
import Testing
import TetherFirmware
import TetherTestSupport

/// The whole update over UDP against the simulated device: verify, upload, test, reset, read, confirm; a revert; an
/// untrusted image refused before a datagram is sent. Images and keys are the committed imgtool fixtures
/// (Tests/MCUbootImageTests/make-images.sh): ecdsa-p256-hash.img (-v 0.9.12+3) is signed by trusted/ecdsa-p256.der.
@Suite struct FirmwareUDPUpdateTests {
    static func trustedKeys() throws -> TrustedKeys {
        let directory = SimulatedDevice.fixtures.appendingPathComponent("trusted")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        return TrustedKeys(try names.map { name in
            try TrustedKey(name: name, contents: [UInt8](Data(contentsOf: directory.appendingPathComponent(name))))
        })
    }

    /// `proveFor` is zero unless a test is about the proving wait; `whenProving` runs when it begins.
    static func update(
        _ name: String, server: SMPUDPDeviceServer, leaveInTest: Bool = false, lossy: Bool = false, proveFor: Duration = .zero,
        whenProving: @escaping @Sendable () -> Void = {}
    ) async throws
        -> (Result<FirmwareUDPUpdate.Outcome, FirmwareUDPUpdate.Failure>, [FirmwareUDPUpdate.Event])
    {
        let update = FirmwareUDPUpdate(image: try SimulatedDevice.image(name), trustedKeys: try trustedKeys())
        let target = UDPTarget(host: "127.0.0.1", port: server.port)
        var options = FirmwareUDPUpdate.Options()
        options.leaveInTest = leaveInTest
        options.comeBackWithin = .seconds(20)
        options.proveFor = proveFor
        var configuration = SMPUDPSession.configuration()
        if lossy {
            // Lost answers are waited for: keep the waits short so that the test is quick (the retries still bound them).
            configuration.timeout = .milliseconds(150)
            configuration.retries = 5
            options.uploader.firstChunkTimeout = .milliseconds(150)
        }
        let frozen = options
        let frozenConfiguration = configuration
        return try await onOwnThread {
            var events: [FirmwareUDPUpdate.Event] = []
            let result = Result { () throws(FirmwareUDPUpdate.Failure) in
                try update.run(target: target, configuration: frozenConfiguration, options: frozen) { event in
                    events.append(event)
                    if case .proving = event { whenProving() }
                }
            }
            return (result, events)
        }
    }

    @Test func theNewImageRunsAndIsConfirmed() async throws {
        let server = try SimulatedDevice.start(bufferSize: 256, bufferCount: 4)
        defer { server.stop() }
        let newHash = try #require(SlotImage(try SimulatedDevice.image("ecdsa-p256-hash"))).hash
        let (result, events) = try await Self.update("ecdsa-p256-hash", server: server)
        #expect(try result.get() == .confirmed(version: "0.9.12.3"))
        #expect(events.contains(.parameters(SMPParameters(bufferSize: 256, bufferCount: 4))))
        let progress = events.compactMap { if case .progress(let p) = $0 { p.confirmedBytes } else { nil } }
        let size = try SimulatedDevice.image("ecdsa-p256-hash").count
        #expect(progress.count > 4 && progress.last == size)
        #expect(events.contains(.markedForTest) && events.contains(.resetSent) && events.last == .confirmed)
        let running = try #require(events.compactMap { if case .running(let slot) = $0 { slot } else { nil } }.first)
        #expect(running.hash == newHash && running.active && !running.confirmed)
        let (primary, confirmed, resets) = server.withDevice { ($0.slots.primary.hash, $0.slots.primaryConfirmed, $0.slots.resets) }
        #expect(primary == newHash && confirmed && resets == 1)
    }

    /// UDP loses datagrams: with every 7th answer lost (the request still carried out), the windowed upload and the
    /// state requests are retried and the update still ends with the new image confirmed.
    @Test func theUpdateSurvivesLostAnswers() async throws {
        let server = try SimulatedDevice.start(bufferSize: 256, bufferCount: 4)
        defer { server.stop() }
        server.dropAnswers(every: 7)
        let (result, _) = try await Self.update("ecdsa-p256-hash", server: server, lossy: true)
        #expect(try result.get() == .confirmed(version: "0.9.12.3"))
        let newHash = try #require(SlotImage(try SimulatedDevice.image("ecdsa-p256-hash"))).hash
        #expect(server.withDevice { $0.slots.primary.hash } == newHash)
        // At least 14 datagrams, so at least two answers were lost (a later answer in the window acknowledges a chunk
        // whose answer was lost; a lost answer to a lone request is retried).
        #expect(server.datagramsReceived >= 14)
    }

    @Test func leftInTestTheImageRevertsAtTheNextReset() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let (result, _) = try await Self.update("ecdsa-p256-hash", server: server, leaveInTest: true)
        #expect(try result.get() == .runningInTest(version: "0.9.12.3"))
        let version = server.withDevice { device in
            device.reset()
            return device.slots.primary.version
        }
        #expect(version == "1.2.3.4")
    }

    @Test func aDeviceThatComesBackOnItsOldImageIsAReportedRevert() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let newHash = try #require(SlotImage(try SimulatedDevice.image("ecdsa-p256-hash"))).hash
        let oldHash = try #require(SlotImage(try SimulatedDevice.image("ed25519-hash"))).hash
        server.withDevice { $0.crashingImages = [newHash] }
        let (result, events) = try await Self.update("ecdsa-p256-hash", server: server)
        #expect(throws: FirmwareUDPUpdate.Failure.reverted(runningVersion: "1.2.3.4", runningHash: oldHash)) { try result.get() }
        #expect(!events.contains(.confirmed))
        let (primary, confirmed) = server.withDevice { ($0.slots.primary.hash, $0.slots.primaryConfirmed) }
        #expect(primary == oldHash && confirmed)
    }

    /// The proving wait (rule 5): the new image answers after the reset, then crashes while it is on test; its
    /// watchdog resets the device and MCUboot goes back to the old image. Confirming at once would have made the
    /// crashing image permanent; waiting finds the revert.
    @Test func anImageThatCrashesWhileProvingItselfIsNotConfirmed() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let oldHash = try #require(SlotImage(try SimulatedDevice.image("ed25519-hash"))).hash
        let (result, events) = try await Self.update("ecdsa-p256-hash", server: server, proveFor: .milliseconds(300)) {
            server.withDevice { $0.reset() }  // the watchdog, while the image proves itself
        }
        #expect(throws: FirmwareUDPUpdate.Failure.reverted(runningVersion: "1.2.3.4", runningHash: oldHash)) { try result.get() }
        #expect(events.contains(.proving(seconds: 0.3)) && !events.contains(.confirmed))
        let (primary, confirmed) = server.withDevice { ($0.slots.primary.hash, $0.slots.primaryConfirmed) }
        #expect(primary == oldHash && confirmed)
    }

    @Test func anImageThatKeepsRunningWhileProvingItselfIsConfirmed() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let newHash = try #require(SlotImage(try SimulatedDevice.image("ecdsa-p256-hash"))).hash
        let (result, events) = try await Self.update("ecdsa-p256-hash", server: server, proveFor: .milliseconds(300))
        #expect(try result.get() == .confirmed(version: "0.9.12.3"))
        // The state read after the reset, the proving wait, a second read (still the new image, on test), the confirmation.
        let tail = Array(events.suffix(4))
        #expect(tail.count == 4 && tail[1] == .proving(seconds: 0.3) && tail[3] == .confirmed)
        for event in [tail[0], tail[2]] {
            guard case .running(let slot) = event else { Issue.record("expected a state read, got \(event)"); continue }
            #expect(slot.hash == newHash && slot.active && !slot.confirmed)
        }
        #expect(server.withDevice { ($0.slots.primary.hash, $0.slots.primaryConfirmed) } == (newHash, true))
    }

    /// A device whose flash takes its time: the first chunk is answered only once the slot's sectors are erased (here
    /// 1.4 s), far beyond the 0.4 s every other request gets, without a retry. The uploader's long first-chunk wait
    /// (`firstChunkTimeout`, ImageUploader rule 2) is what lets the update through.
    @Test func theFirstChunkWaitsForTheErase() async throws {
        let imageSize = try SimulatedDevice.image("ecdsa-p256-hash").count
        let sectors = (imageSize + 4095) / 4096
        let flash = SMPDevice.FlashTiming(sectorSize: 4096, eraseTimePerSector: .milliseconds(1400) / sectors, writeTimePerKiB: .microseconds(100))
        let server = try SimulatedDevice.start(flash: flash)
        defer { server.stop() }
        let update = FirmwareUDPUpdate(image: try SimulatedDevice.image("ecdsa-p256-hash"), trustedKeys: try Self.trustedKeys())
        let target = UDPTarget(host: "127.0.0.1", port: server.port)
        var options = FirmwareUDPUpdate.Options()
        options.proveFor = .zero
        options.uploader.firstChunkTimeout = .seconds(20)
        var configuration = SMPUDPSession.configuration()
        configuration.timeout = .milliseconds(400)
        configuration.retries = 0
        let (frozenOptions, frozenConfiguration) = (options, configuration)
        let result = try await onOwnThread {
            Result { () throws(FirmwareUDPUpdate.Failure) in try update.run(target: target, configuration: frozenConfiguration, options: frozenOptions) }
        }
        #expect(try result.get() == .confirmed(version: "0.9.12.3"))
        #expect(server.withDevice { $0.erases } == 1)
    }

    /// The image already runs: confirmed, nothing is sent again (its upload would be refused, it is the active image);
    /// on test, it is confirmed without another upload.
    @Test func anImageThatAlreadyRunsIsNotSentAgain() async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let (tested, _) = try await Self.update("ecdsa-p256-hash", server: server, leaveInTest: true)
        #expect(try tested.get() == .runningInTest(version: "0.9.12.3"))
        let afterFirst = server.datagramsReceived
        let (confirmed, events) = try await Self.update("ecdsa-p256-hash", server: server)
        #expect(try confirmed.get() == .confirmed(version: "0.9.12.3"))
        #expect(!events.contains(.markedForTest) && events.last == .confirmed)
        #expect(server.datagramsReceived == afterFirst + 2, "a state read and the confirmation, no upload")
        let (again, _) = try await Self.update("ecdsa-p256-hash", server: server)
        #expect(try again.get() == .alreadyRunning(version: "0.9.12.3"))
        #expect(server.datagramsReceived == afterFirst + 3)
    }

    @Test(arguments: ["untrusted-ed25519", "unsigned"])
    func anUntrustedImageIsRefusedBeforeADatagramIsSent(_ name: String) async throws {
        let server = try SimulatedDevice.start()
        defer { server.stop() }
        let (result, events) = try await Self.update(name, server: server)
        guard case .failure(.refused) = result else {
            Issue.record("\(name): \(result)")
            return
        }
        #expect(events.isEmpty)
        #expect(server.datagramsReceived == 0)
    }
}
