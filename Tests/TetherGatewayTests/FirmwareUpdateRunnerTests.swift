import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import MCUbootImage
import SMPDeviceModel
import TetherDaemon
import TetherFirmware
import TetherGateway
import TetherStore
import Testing
import TetherTestSupport

/// tetherd's firmware update (FirmwareUpdateRunner) on a paired Tether device that also offers MCUmgr's SMP service,
/// through the gateway that keeps it connected: tether-sim on a private dbus-daemon, a real SQLite journal, and the
/// committed imgtool fixtures (Tests/MCUbootImageTests/Fixtures; the device's factory image is ed25519-hash.img,
/// 1.2.3+4, and the update is ed25519-full-seccnt.img, 2.0.1+99, both signed by trusted/ed25519.pem).
/// Here rather than in TetherDaemonTests because it needs this target's GatewayHarness.
@Suite struct FirmwareUpdateRunnerTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("MCUbootImageTests/Fixtures")

    static func image(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: fixtures.appendingPathComponent(name + ".img")))
    }

    static func trustedKeys() throws -> TrustedKeys {
        try TrustedKeyDirectory.load(fixtures.appendingPathComponent("trusted").path)
    }

    static func simulator() -> SimulatorConfiguration {
        var configuration = GatewayHarness.configuration(devices: 1)
        configuration.devices[0].smp = SMPServiceConfiguration(image: fixtures.appendingPathComponent("ed25519-hash.img").path)
        return configuration
    }

    static var options: FirmwareUpdateProcedure.Options {
        var options = FirmwareUpdateProcedure.Options()
        options.proveFor = .milliseconds(300)
        options.comeBackWithin = .seconds(30)
        return options
    }

    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var events: [FirmwareUpdateProcedure.Event] = []
        func append(_ event: FirmwareUpdateProcedure.Event) { lock.withLock { events.append(event) } }
        var all: [FirmwareUpdateProcedure.Event] { lock.withLock { events } }
    }

    @Test(.timeLimit(.minutes(3))) func updatesAHeldDeviceJournalsItAndGivesItBack() async throws {
        let image = try Self.image("ed25519-full-seccnt")
        try await GatewayHarness.with(simulator: Self.simulator()) { harness in
            let (address, serial) = (GatewayHarness.address(1), GatewayHarness.serial(1))
            try await harness.pairAll(1)
            #expect(try await harness.simulated.recordHits(address, 2) == 2)
            try await waitUntil("2 events stored") { try harness.storage.consumption.eventCount(serial: serial) == 2 }

            let journal = FirmwareUpdateJournal(database: harness.storage.database)
            var runner = FirmwareUpdateRunner(gateway: harness.gateway, journal: journal)
            runner.offsetStride = 4096
            let events = Events()
            let (record, outcome) = try await runner.run(
                device: serial, image: image, imagePath: "/var/lib/tether/firmware/new.img", trustedKeys: Self.trustedKeys(),
                options: Self.options, observe: { events.append($0) })

            #expect(outcome == .confirmed(version: "2.0.1.99"))  // as SMP writes versions
            #expect(record.address == address)
            #expect(record.phase == .finished && record.outcome == .confirmed)
            #expect(record.bytesAcknowledged == image.count)
            #expect(try journal.unfinished().isEmpty)
            #expect(events.all.contains(.resetSent) && events.all.contains(.confirmed))
            // The device runs the new image, confirmed (its SMP server says so, not the gateway).
            let model = try #require(await harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(address))?.smpDevice)
            #expect(model.slots.primary.bytes == image)
            #expect(model.slots.primaryConfirmed)

            // Given back: the link session has the device again, and what it records is stored.
            try await waitUntil("the device's link set up again", seconds: 60) {
                let device = await harness.gateway.device(serial)
                return device?.heldFor == nil && device?.state == .connected
            }
            #expect(try await harness.simulated.recordHits(address, 3) == 3)
            try await waitUntil("5 events stored", seconds: 60) { try harness.storage.consumption.eventCount(serial: serial) == 5 }
        }
    }

    /// Runner rules 5 and 6: cancelled while the new image proves itself (tetherd stopping), the update is left
    /// unfinished, the image unconfirmed and the device given back; resumed, it goes straight to proving (nothing
    /// uploaded or reset again) and is confirmed at attempt 2.
    @Test(.timeLimit(.minutes(3))) func anUpdateInterruptedWhileProvingIsLeftUnfinishedAndResumes() async throws {
        let image = try Self.image("ed25519-full-seccnt")
        try await GatewayHarness.with(simulator: Self.simulator()) { harness in
            let (address, serial) = (GatewayHarness.address(1), GatewayHarness.serial(1))
            try await harness.pairAll(1)
            let journal = FirmwareUpdateJournal(database: harness.storage.database)
            let runner = FirmwareUpdateRunner(gateway: harness.gateway, journal: journal)
            var options = Self.options
            options.proveFor = .seconds(600)
            let (proving, provingStarted) = AsyncStream.makeStream(of: Void.self)
            let keys = try Self.trustedKeys()
            let update = Task {
                try await runner.run(device: serial, image: image, imagePath: "/kept.img", trustedKeys: keys, options: options) { event in
                    if case .proving = event { provingStarted.yield() }
                }
            }
            for await _ in proving { break }
            update.cancel()
            do {
                _ = try await update.value
                Issue.record("a cancelled update ran to its end")
            } catch FirmwareUpdateRunner.Failure.interrupted(let record) {
                #expect(record.phase == .proving && record.outcome == nil)
            }
            let unfinished = try #require(try journal.unfinished().first)
            #expect(unfinished.phase == .proving)
            #expect(await harness.gateway.device(serial)?.heldFor == nil)
            let model = { () async throws -> SMPDevice in
                try #require(await harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(address))?.smpDevice)
            }
            #expect(try await model().slots.primary.bytes == image)
            #expect(try await !model().slots.primaryConfirmed, "the proving wait ended into a confirmation")

            let started = try await runner.resume(unfinished, image: image, trustedKeys: keys, options: Self.options)
            let events = Events()
            let (record, outcome) = try await runner.complete(started) { events.append($0) }
            #expect(outcome == .confirmed(version: "2.0.1.99"))
            #expect(record.attempts == 2 && record.outcome == .confirmed)
            #expect(!events.all.contains(.resetSent), "\(events.all)")
            #expect(events.all.contains { if case .proving = $0 { true } else { false } })
            #expect(try await model().slots.primaryConfirmed)
        }
    }

    /// A new image that crashes at boot: MCUboot reverts to the old one, the journal says `reverted` with the
    /// running version, nothing is confirmed, and the device is given back.
    @Test(.timeLimit(.minutes(3))) func anImageThatCrashesAtBootIsReportedReverted() async throws {
        let image = try Self.image("ed25519-full-seccnt")
        let newHash = try #require(SlotImage(image)).hash
        try await GatewayHarness.with(simulator: Self.simulator()) { harness in
            let (address, serial) = (GatewayHarness.address(1), GatewayHarness.serial(1))
            try await harness.pairAll(1)
            let device = try #require(await harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(address)))
            await device.withSMPDevice { $0.crashingImages = [newHash] }
            let journal = FirmwareUpdateJournal(database: harness.storage.database)
            let runner = FirmwareUpdateRunner(gateway: harness.gateway, journal: journal)
            do {
                _ = try await runner.run(device: serial, image: image, imagePath: "x", trustedKeys: Self.trustedKeys(), options: Self.options)
                Issue.record("a crashing image was reported running")
            } catch FirmwareUpdateRunner.Failure.update(let record, .reverted(let running, _)) {
                #expect(running == "1.2.3.4")
                #expect(record.outcome == .reverted && record.phase == .finished)
                #expect(record.message?.contains("reverted") == true, "\(String(describing: record.message))")
            }
            let model = try #require(await device.smpDevice)
            #expect(model.slots.primary.bytes == (try Self.image("ed25519-hash")))
            #expect(await harness.gateway.device(serial)?.heldFor == nil)
        }
    }

    @Test(.timeLimit(.minutes(2))) func anUntrustedImageIsRefusedBeforeTheDeviceIsTakenOrJournaled() async throws {
        try await GatewayHarness.with(simulator: Self.simulator()) { harness in
            let (address, serial) = (GatewayHarness.address(1), GatewayHarness.serial(1))
            try await harness.pairAll(1)
            let journal = FirmwareUpdateJournal(database: harness.storage.database)
            let runner = FirmwareUpdateRunner(gateway: harness.gateway, journal: journal)
            await #expect(throws: FirmwareUpdateRunner.Failure.self) {
                try await runner.run(
                    device: serial, image: try Self.image("untrusted-ed25519"), imagePath: "x", trustedKeys: Self.trustedKeys(), options: Self.options)
            }
            #expect(try journal.history().isEmpty)
            #expect(await harness.gateway.device(serial)?.heldFor == nil)
            // Not one SMP request reached the device (its link session's writes go to another characteristic).
            let server = try #require(await harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(address))?.smp)
            #expect(server.requestsAnswered == 0)
        }
    }

    @Test(.timeLimit(.minutes(2))) func aDeviceHeldForSomethingElseIsBusyAndTheJournalSaysSo() async throws {
        try await GatewayHarness.with(simulator: Self.simulator()) { harness in
            let serial = GatewayHarness.serial(1)
            try await harness.pairAll(1)
            let journal = FirmwareUpdateJournal(database: harness.storage.database)
            let runner = FirmwareUpdateRunner(gateway: harness.gateway, journal: journal)
            let other = try await harness.gateway.hold(serial, for: "a technician's diagnosis")
            do {
                _ = try await runner.run(
                    device: serial, image: try Self.image("ed25519-full-seccnt"), imagePath: "x", trustedKeys: Self.trustedKeys(),
                    options: Self.options)
                Issue.record("an update of a held device ran")
            } catch FirmwareUpdateRunner.Failure.busy(let reason) {
                #expect(reason.contains("a technician's diagnosis"))
            } catch {
                Issue.record("expected busy, got \(error)")
            }
            let history = try journal.history()
            #expect(history.count == 1 && history.first?.outcome == .failed)
            #expect(try journal.unfinished().isEmpty)
            await harness.gateway.release(other)
        }
    }
}
