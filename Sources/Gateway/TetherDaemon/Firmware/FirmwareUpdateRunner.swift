import Crypto
import MCUbootImage
import SMP
import TetherFirmware
import TetherGateway
import TetherPrimitives
import TetherStore

/// A firmware update tetherd carries out on one adopted device over BLE (issue 16, item 5; docs/design/ota.md,
/// "tetherd owns the radio"), in this order:
///  1. The image is verified against the trusted keys first: a refused image touches neither the journal nor the
///     device (FirmwareUpdateProcedure rule 1 would refuse it too, but only after the device was taken).
///  2. The journal records the update before the device is taken: one unfinished update per device (the journal's
///     `conflict`, answered as busy), and a tetherd killed later finds it (`FirmwareUpdateJournal.unfinished`).
///  3. The device is held (Gateway+Holds) for the procedure and released whatever happens: its sessions get it back.
///  4. The procedure's events move the journal forward as they happen: the device's offset while uploading (every
///     `offsetStride` bytes and at the end: a durable write per answer would cost an fsync per request, and the device
///     resumes from its own offset anyway), `testing` once marked for test, `proving` when the new image runs and
///     must prove itself.
///  5. The end finishes the record with the outcome; a failure's message says why. An update interrupted (its task
///     cancelled: tetherd stops) is left unfinished where the device left it, for `resume`.
///  6. `resume` takes an unfinished update up again with tetherd's kept copy of the image: verified again (a key
///     removed since refuses it, and so does a copy that is not the journaled image), attempt + 1, the device held,
///     then as 4–5. The procedure starts from the device's state: an upload goes on from the device's offset
///     (ImageUploader rule 5), an image already running on test goes straight to proving (FirmwareUpdateProcedure
///     rule 1).
public struct FirmwareUpdateRunner: Sendable {
    public let gateway: Gateway
    public let journal: FirmwareUpdateJournal
    public var settings: SMPBluetoothSession.Settings
    /// Rule 4's stride.
    public var offsetStride = 32 * 1024
    let now: @Sendable () -> Timestamp

    public init(
        gateway: Gateway, journal: FirmwareUpdateJournal, settings: SMPBluetoothSession.Settings = .init(),
        now: @escaping @Sendable () -> Timestamp = { WallClock.now() }
    ) {
        self.gateway = gateway
        self.journal = journal
        self.settings = settings
        self.now = now
    }

    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Rule 1: nothing was recorded or sent.
        case refused(ImageRefusal?)
        /// Rule 2: the device has an unfinished update, or is held for something else; nothing was sent.
        case busy(String)
        /// The device cannot be had (unknown, not adopted, the gateway not running).
        case gateway(GatewayError)
        case store(StoreError)
        /// The procedure ended without the new image running; the journal's record says so.
        case update(FirmwareUpdateRecord, FirmwareUpdateProcedure.Failure)
        /// Rule 5: cancelled before its end; the journal keeps it unfinished.
        case interrupted(FirmwareUpdateRecord)

        public var description: String {
            switch self {
            case .refused(let refusal): FirmwareUpdateProcedure.Failure.refused(refusal).description
            case .busy(let reason): reason
            case .gateway(let error): error.description
            case .store(let error): "\(error)"
            case .update(_, let failure): failure.description
            case .interrupted(let record): "update \(record.uid) interrupted (\(record.phase.rawValue)); it resumes when tetherd starts again"
            }
        }
    }

    /// An update past rules 1–3: verified, journaled, its device held. `complete` carries it out.
    public struct Started: Sendable {
        public let record: FirmwareUpdateRecord
        public let hold: DeviceHold
        public let options: FirmwareUpdateProcedure.Options
        let image: [UInt8]
        let verdict: ImageVerdict
    }

    /// Rules 1–5 in one call. `observe` hears the procedure's events as they happen.
    public func run(
        device: String, image: [UInt8], imagePath: String, trustedKeys: TrustedKeys, options: FirmwareUpdateProcedure.Options,
        observe: @Sendable (FirmwareUpdateProcedure.Event) -> Void = { _ in }
    ) async throws(Failure) -> (record: FirmwareUpdateRecord, outcome: FirmwareUpdateProcedure.Outcome) {
        let started = try await start(device: device, image: image, imagePath: imagePath, trustedKeys: trustedKeys, options: options)
        return try await complete(started, observe: observe)
    }

    /// Rules 1–3: what can be refused at once (for the control API to answer before the update runs).
    public func start(
        device: String, image: [UInt8], imagePath: String, trustedKeys: TrustedKeys, options: FirmwareUpdateProcedure.Options
    ) async throws(Failure) -> Started {
        try await start(
            device: device, image: image, verdict: ImageVerifier.inspect(image, trustedKeys: trustedKeys), imagePath: imagePath,
            options: options)
    }

    /// The same, with the image's verdict made already by the caller (`ImageVerifier.inspect` of these very bytes),
    /// which refused it if it was not verified: the control API verifies before it reads anything else.
    public func start(
        device: String, image: [UInt8], verdict: ImageVerdict, imagePath: String, options: FirmwareUpdateProcedure.Options
    ) async throws(Failure) -> Started {
        guard verdict.isVerified, let parsed = verdict.image, let hash = verdict.computedHash else { throw .refused(verdict.refusal) }
        var random = SystemRandomNumberGenerator()
        let record: FirmwareUpdateRecord
        do {
            let request = FirmwareUpdateJournal.Request(
                address: device, imageVersion: "\(parsed.header.version)", imageHash: hash, uploadSha256: Array(SHA256.hash(data: image)),
                imageBytes: image.count, imagePath: imagePath, leaveInTest: options.leaveInTest, proveFor: options.proveFor)
            record = try journal.begin(try await address(of: device, into: request), at: now(), using: &random)
        } catch let error as Failure {
            throw error
        } catch let error as StoreError where error.code == .conflict {
            throw .busy(error.reason)
        } catch {
            throw .store(StoreError(error))
        }
        do {
            let hold = try await gateway.hold(record.address, for: "firmware update \(record.uid)")
            return Started(record: record, hold: hold, options: options, image: image, verdict: verdict)
        } catch {
            finish(record.uid, .failed, message: "\(error)")
            if case .busy(let reason) = error { throw .busy(reason) }
            throw .gateway(error)
        }
    }

    /// Rules 4 and 5, then the device is released.
    public func complete(
        _ started: Started, observe: @Sendable (FirmwareUpdateProcedure.Event) -> Void = { _ in }
    ) async throws(Failure) -> (record: FirmwareUpdateRecord, outcome: FirmwareUpdateProcedure.Outcome) {
        let record = started.record
        let result = await procedure(
            record, hold: started.hold, image: started.image, verdict: started.verdict, options: started.options, observe: observe)
        await gateway.release(started.hold)
        if case .failure = result, Task.isCancelled { throw .interrupted((try? journal.update(uid: record.uid)) ?? record) }
        switch result {
        case .success(let outcome):
            let finished = finish(record.uid, Self.journalOutcome(outcome), message: nil) ?? record
            return (finished, outcome)
        case .failure(let failure):
            let outcome: FirmwareUpdateRecord.Outcome = if case .reverted = failure { .reverted } else { .failed }
            let finished = finish(record.uid, outcome, message: failure.description) ?? record
            throw .update(finished, failure)
        }
    }

    /// Rule 6.
    public func resume(
        _ record: FirmwareUpdateRecord, image: [UInt8], trustedKeys: TrustedKeys, options: FirmwareUpdateProcedure.Options
    ) async throws(Failure) -> Started {
        let verdict = ImageVerifier.inspect(image, trustedKeys: trustedKeys)
        guard verdict.isVerified, verdict.computedHash == Array(record.imageHash) else {
            let refusal = FirmwareUpdateProcedure.Failure.refused(verdict.refusal).description
            finish(record.uid, .failed, message: verdict.isVerified ? "the kept image \(record.imagePath) is not the journaled one" : refusal)
            throw .refused(verdict.refusal)
        }
        let retried: FirmwareUpdateRecord
        do {
            retried = try journal.retried(record.uid, at: now())
        } catch {
            throw .store(error)
        }
        do {
            let hold = try await gateway.hold(record.address, for: "firmware update \(record.uid)")
            return Started(record: retried, hold: hold, options: options, image: image, verdict: verdict)
        } catch {
            if case .busy(let reason) = error { throw .busy(reason) }
            throw .gateway(error)
        }
    }

    /// The journal keys an update by the device's identity address; a serial is resolved through the gateway.
    private func address(of device: String, into request: FirmwareUpdateJournal.Request) async throws(Failure) -> FirmwareUpdateJournal.Request {
        var request = request
        guard let snapshot = await gateway.device(device) else { throw .gateway(.unknownDevice(device)) }
        request.address = snapshot.address
        return request
    }

    /// Rules 3 and 4: the procedure over the held device's link, the journal following its events.
    private func procedure(
        _ record: FirmwareUpdateRecord, hold: DeviceHold, image: [UInt8], verdict: ImageVerdict, options: FirmwareUpdateProcedure.Options,
        observe: @Sendable (FirmwareUpdateProcedure.Event) -> Void
    ) async -> Result<FirmwareUpdateProcedure.Outcome, FirmwareUpdateProcedure.Failure> {
        let transport = FirmwareBluetoothTransport(bluez: gateway.bluez, device: hold.devicePath, settings: settings)
        var procedure = FirmwareUpdateProcedure(verdict: verdict, imageSize: image.count, options: options)
        let (journal, now, stride, uid) = (journal, now, offsetStride, record.uid)
        var recordedOffset = 0
        do {
            let outcome = try await procedure.run(image: image, over: transport) { event in
                switch event {
                case .progress(let progress) where progress.confirmedBytes >= recordedOffset + stride || progress.confirmedBytes == image.count:
                    // The device may answer a resumed upload below what the journal has (it lost its partial upload).
                    _ = try? journal.acknowledged(uid, offset: progress.confirmedBytes, resetTo: progress.confirmedBytes < recordedOffset, at: now())
                    recordedOffset = progress.confirmedBytes
                case .markedForTest: _ = try? journal.advance(uid, to: .testing, at: now())
                case .proving: _ = try? journal.advance(uid, to: .proving, at: now())
                default: break
                }
                observe(event)
            }
            return .success(outcome)
        } catch {
            return .failure(error)
        }
    }

    @discardableResult
    /// A started update that cannot go on before its procedure began (its image could not be kept): finished as
    /// failed with `reason`, its device released. Nothing was sent to the device.
    public func abandon(_ started: Started, because reason: String) async {
        _ = finish(started.record.uid, .failed, message: reason)
        await gateway.release(started.hold)
    }

    private func finish(_ uid: String, _ outcome: FirmwareUpdateRecord.Outcome, message: String?) -> FirmwareUpdateRecord? {
        var random = SystemRandomNumberGenerator()
        return try? journal.finish(uid, outcome, message: message, at: now(), using: &random)
    }

    static func journalOutcome(_ outcome: FirmwareUpdateProcedure.Outcome) -> FirmwareUpdateRecord.Outcome {
        switch outcome {
        case .confirmed: .confirmed
        case .runningInTest: .runningInTest
        case .alreadyRunning: .alreadyRunning
        }
    }
}
