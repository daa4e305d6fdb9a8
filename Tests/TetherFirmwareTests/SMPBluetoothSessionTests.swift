import BlueZ
import BlueZSimulator
import BlueZTestSupport
import Crypto
import DBus
import Foundation
import MCUbootImage
import SMP
import SMPDeviceModel
import Testing
import TetherFirmware
import TetherTestSupport

/// Tether's SMP BLE transport (SMPBluetoothSession, FirmwareBluetoothTransport) against tether-sim's simulated SMP
/// device on a private dbus-daemon: what the device's model holds at the end is the verdict, not what the client
/// says. Every test is bounded by its time limit; each wait inside is bounded too.
@Suite(.serialized) struct SMPBluetoothSessionTests {
    static var reassembling: SMPBluetoothSession.Settings {
        var settings = SMPBluetoothSession.Settings()
        settings.deviceReassembles = true
        return settings
    }

    @Test(.timeLimit(.minutes(2)))
    func listsTheImageStateAndEchoesAMessageLongerThanOneNotification() async throws {
        let factory = try #require(SlotImage(try SimulatedDevice.image("ed25519-hash")))
        try await SimulatedSMPOverBLE.with { simulated, bluez in
            let session = try await SMPBluetoothSession.open(bluez: bluez, device: SimulatedSMPOverBLE.path, settings: Self.reassembling)
            defer { session.close() }
            #expect(session.mtu == 247)
            #expect(session.writeLimit <= 247 - 3)

            let state = try await session.imageState()
            let model = try await SimulatedSMPOverBLE.model(simulated)
            #expect(state.images.count == model.slots.states.count)
            let running = try #require(state.images.first { $0.active })
            #expect(running.hash == model.slots.primary.hash)
            #expect(running.hash == factory.hash)
            #expect(running.version == model.slots.primary.version)
            #expect(running.confirmed)

            // 420 characters: the request is two writes the device joins, the answer two notifications the client joins.
            let text = String((0..<420).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
            let notificationsBefore = try await SimulatedSMPOverBLE.statistic("notifications_sent", simulated)
            let writesBefore = try await SimulatedSMPOverBLE.statistic("writes_received", simulated)
            #expect(try await session.echo(text) == text)
            let notifications = try await SimulatedSMPOverBLE.statistic("notifications_sent", simulated) - notificationsBefore
            let writes = try await SimulatedSMPOverBLE.statistic("writes_received", simulated) - writesBefore
            #expect(notifications >= 2, "an echo of \(text.count) characters fits one notification of \(session.mtu - 3) bytes?")
            #expect(writes >= 2)
            #expect(try await SimulatedSMPOverBLE.server(simulated).writesDropped == 0)
        }
    }

    @Test(.enabled(if: PinnedPythonTools.python != nil), .timeLimit(.minutes(4)))
    func updatesTestsResetsReconnectsAndConfirms() async throws {
        let image = try await SimulatedSMPOverBLE.signedImage(bodySize: 30_000)
        let newImage = try #require(SlotImage(image))
        let factory = try #require(SlotImage(try SimulatedDevice.image("ed25519-hash")))
        try await SimulatedSMPOverBLE.with { simulated, bluez in
            var options = FirmwareUpdateProcedure.Options()
            options.proveFor = .milliseconds(300)
            options.comeBackWithin = .seconds(30)
            var procedure = FirmwareUpdateProcedure(
                verdict: ImageVerifier.inspect(image, trustedKeys: try FirmwareUDPUpdateTests.trustedKeys()), imageSize: image.count,
                options: options)
            let transport = FirmwareBluetoothTransport(bluez: bluez, device: SimulatedSMPOverBLE.path, settings: Self.reassembling)
            var events: [FirmwareUpdateProcedure.Event] = []
            let outcome = try await procedure.run(image: image, over: transport) { events.append($0) }

            #expect(outcome == .confirmed(version: newImage.version))
            #expect(events.contains(.resetSent))
            #expect(events.contains(.confirmed))
            let progress = events.compactMap { if case .progress(let progress) = $0 { progress.confirmedBytes } else { nil } }
            #expect(progress.last == image.count)
            #expect(progress == progress.sorted())
            // The device came back on a new connection, and runs the new image confirmed; the old one waits in the
            // secondary slot (MCUboot's swap), both byte for byte.
            let model = try await SimulatedSMPOverBLE.model(simulated)
            #expect(model.slots.resets == 1)
            #expect(model.slots.primary.bytes == image)
            #expect(model.slots.primaryConfirmed)
            #expect(model.slots.secondary?.bytes == factory.bytes)
            let final = try await transport.session().imageState()
            #expect(final.images.contains { $0.active && $0.confirmed && $0.hash == newImage.hash })
            #expect(try await SimulatedSMPOverBLE.server(simulated).writesDropped == 0)
        }
    }

    /// FirmwareBluetoothTransport rule 2: the update's own upload connects again and goes on from the device's offset.
    @Test(.enabled(if: PinnedPythonTools.python != nil), .timeLimit(.minutes(3)))
    func anUpdateWhoseLinkDropsMidUploadConnectsAgainAndFinishes() async throws {
        let image = try await SimulatedSMPOverBLE.signedImage(bodySize: 60_000)
        let newImage = try #require(SlotImage(image))
        try await SimulatedSMPOverBLE.with { simulated, bluez in
            var options = FirmwareUpdateProcedure.Options()
            options.leaveInTest = true
            options.comeBackWithin = .seconds(30)
            var procedure = FirmwareUpdateProcedure(
                verdict: ImageVerifier.inspect(image, trustedKeys: try FirmwareUDPUpdateTests.trustedKeys()), imageSize: image.count,
                options: options)
            let transport = FirmwareBluetoothTransport(bluez: bluez, device: SimulatedSMPOverBLE.path, settings: Self.reassembling)
            let cut = Task { try await Self.disconnect(simulated, onceTheDeviceHolds: image.count / 2) }
            var progress: [Int] = []
            let outcome = try await procedure.run(image: image, over: transport) { event in
                if case .progress(let reported) = event { progress.append(reported.confirmedBytes) }
            }
            #expect(try await cut.value, "the link was never cut")
            #expect(outcome == .runningInTest(version: newImage.version))
            // Never back to the start: the new link went on from what the device held.
            #expect(progress == progress.sorted())
            #expect(progress.last == image.count)
            let model = try await SimulatedSMPOverBLE.model(simulated)
            #expect(model.slots.primary.bytes == image)
            #expect(!model.slots.primaryConfirmed)
        }
    }

    /// Disconnects the device (a fault, as a remote disconnect) once its upload holds `bytes`; false if it never did.
    static func disconnect(_ simulated: SimulatedBlueZ, onceTheDeviceHolds bytes: Int) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let offset = try await SimulatedSMPOverBLE.model(simulated).uploadOffset, offset >= bytes {
                try await simulated.inject("disconnect", ["device": .objectPath(SimulatedSMPOverBLE.path)])
                return true
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        return false
    }

    @Test(.enabled(if: PinnedPythonTools.python != nil), .timeLimit(.minutes(3)))
    func aDeviceWithoutReassemblyTakesOneRequestPerWrite() async throws {
        let image = try await SimulatedSMPOverBLE.signedImage(bodySize: 12_000)
        try await SimulatedSMPOverBLE.with(reassembly: false) { simulated, bluez in
            let session = try await SMPBluetoothSession.open(bluez: bluez, device: SimulatedSMPOverBLE.path)
            defer { session.close() }
            // A request longer than one write is refused before anything is written.
            let writesBefore = try await SimulatedSMPOverBLE.statistic("writes_received", simulated)
            var refused: FirmwareTransportError?
            do { _ = try await session.echo(String(repeating: "x", count: 400)) } catch { refused = error as? FirmwareTransportError }
            guard case .client(.tooLarge)? = refused else {
                Issue.record("an echo longer than one write to a device that does not reassemble: \(String(describing: refused))")
                return
            }
            #expect(try await SimulatedSMPOverBLE.statistic("writes_received", simulated) == writesBefore)

            var uploader = ImageUploader(image: image, sha256: Array(SHA256.hash(data: image)), configuration: session.uploaderConfiguration())
            var parameters: SMPParameters?
            try await session.drive(&uploader) { order in
                if case .parameters(let answered) = order { parameters = answered }
            }
            #expect(uploader.isFinished)
            #expect(parameters?.bufferCount == 4)
            let model = try await SimulatedSMPOverBLE.model(simulated)
            #expect(model.slots.secondary?.bytes == image)
            let server = try await SimulatedSMPOverBLE.server(simulated)
            #expect(server.writesDropped == 0)
            // One request per write: every write the device got was a whole request it answered.
            let writes = try await SimulatedSMPOverBLE.statistic("writes_received", simulated)
            #expect(server.requestsAnswered == writes)
            #expect(writes > image.count / session.writeLimit)
        }
    }

    @Test(.enabled(if: PinnedPythonTools.python != nil), .timeLimit(.minutes(3)))
    func aLinkLostMidUploadResumesFromTheDevicesOffset() async throws {
        let image = try await SimulatedSMPOverBLE.signedImage(bodySize: 60_000)
        try await SimulatedSMPOverBLE.with { simulated, bluez in
            let first = try await SMPBluetoothSession.open(bluez: bluez, device: SimulatedSMPOverBLE.path, settings: Self.reassembling)
            var uploader = ImageUploader(image: image, sha256: Array(SHA256.hash(data: image)), configuration: first.uploaderConfiguration())
            // The link drops once the device holds a third of the image.
            let cut = Task { try await Self.disconnect(simulated, onceTheDeviceHolds: image.count / 3) }
            var lost: FirmwareTransportError?
            do { try await first.drive(&uploader) { _ in } } catch { lost = error as? FirmwareTransportError }
            #expect(lost == .client(.connectionLost))
            #expect(try await cut.value, "the link was never cut")
            first.close()
            let held = try #require(try await SimulatedSMPOverBLE.model(simulated).uploadOffset)
            #expect(held >= image.count / 3 && held < image.count)
            #expect(!uploader.isFinished)

            try await SimulatedSMPOverBLE.connect(bluez)
            let second = try await SMPBluetoothSession.open(bluez: bluez, device: SimulatedSMPOverBLE.path, settings: Self.reassembling)
            defer { second.close() }
            var progress: [Int] = []
            try await second.drive(&uploader) { order in
                if case .progress(let reported) = order { progress.append(reported.confirmedBytes) }
            }
            #expect(uploader.isFinished)
            // The first answer on the new link is the device's offset, not 0 and not the client's own guess.
            #expect(progress.first == held)
            #expect(progress.last == image.count)
            let model = try await SimulatedSMPOverBLE.model(simulated)
            #expect(model.slots.secondary?.bytes == image)
        }
    }
}

/// Where AcquireNotify is refused the session subscribes with StartNotify: BlueZ refuses it while another client
/// holds a StartNotify session on the characteristic ("Notify acquired", src/gatt-client.c; tether-sim does the same).
@Suite struct SMPBluetoothStartNotifyTests {
    @Test(.timeLimit(.minutes(2)))
    func fallsBackToStartNotifyWhenAcquireNotifyIsRefused() async throws {
        try await SimulatedSMPOverBLE.with { simulated, bluez in
            // The simulated Tether device's SMP service sits at 0x40 (firmware-ble.md): its characteristic at 0x41.
            let otherConnection = try await simulated.connect()
            let other = BlueZSession(connection: otherConnection)
            let held = GattCharacteristic(session: other, path: SimulatedSMPOverBLE.path.appending("service0040").appending("char0041"))
            #expect(try await held.properties()["UUID"]?.stringValue == SMPBluetoothUUID.characteristic)
            let othersValues = try await held.startNotify()
            // The other client's session lasts to the end (its stream ending would call StopNotify).
            defer { withExtendedLifetime(othersValues) {} }
            let session = try await SMPBluetoothSession.open(bluez: bluez, device: SimulatedSMPOverBLE.path)
            defer { session.close() }
            #expect(session.notifyMethod == .startNotify)
            #expect(session.mtu == 247)
            let state = try await session.imageState()
            let model = try await SimulatedSMPOverBLE.model(simulated)
            #expect(state.images.first { $0.active }?.hash == model.slots.primary.hash)
            session.close()
            await otherConnection.close()
        }
    }
}
