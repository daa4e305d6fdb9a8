import Crypto
import DBus
import Foundation
import Logging
import MCUbootImage
import SMP
import Synchronization
import TetherFirmware
import TetherGateway
import TetherPrimitives
import TetherStore

/// The control API's firmware updates (docs/specs/control-api.md, "Firmware updates"): `UpdateFirmware` answers once
/// the update is verified, journaled and its device held (FirmwareUpdateRunner rules 1–3), and the update goes on in
/// tetherd whoever is listening: `FirmwareProgress` signals while it runs, one `FirmwareUpdateFinished` at its end.
///
///  1. The image comes as a file descriptor, so tetherd (least privilege) reads what the technician's `tether` could
///     open; it must be a regular file (a read of one cannot hang the control API) of at most `maximumImageBytes`.
///  2. tetherd keeps its own copy, owner-only, named by the image's SHA-256, once the update is journaled and its
///     device held (a busy device costs no write), before anything is sent: the journal names it, for the resume
///     after a restart. A kept image no unfinished update names is removed (`pruneKeptImages`): when an update
///     ends, and when tetherd starts.
///  3. The trusted keys are read at each update (`[firmware] trusted_keys`): a key added or removed counts from the
///     next update, without a restart.
final class FirmwareUpdates: Sendable {
    /// Rule 1: MCUboot slots on the devices Tether serves are at most a few hundred KiB; 16 MiB bounds a mistake.
    static let maximumImageBytes = 16 << 20

    let runner: FirmwareUpdateRunner
    let trustedKeys: String
    let imageDirectory: String
    let hub: SignalHub
    let logger: Logger
    private let running = Mutex<[String: Task<Void, Never>]>([:])
    /// Serialises keeping an image with pruning: a prune reads the journal, then removes what it does not name, and
    /// an image kept in between (its update journaled after the read) must not be among what it removes.
    private let keptImages = Mutex<Void>(())

    init(runner: FirmwareUpdateRunner, trustedKeys: String, imageDirectory: String, hub: SignalHub, logger: Logger) {
        self.runner = runner
        self.trustedKeys = trustedKeys
        self.imageDirectory = imageDirectory
        self.hub = hub
        self.logger = logger
    }

    func start(device: String, image descriptor: OwnedFileDescriptor, options: [String: DBusValue]) async throws(DBusError) -> DBusValue {
        let procedureOptions = try Self.options(options)
        let image = try Self.read(descriptor)
        let keys: TrustedKeys
        do {
            keys = try TrustedKeyDirectory.load(trustedKeys)
        } catch {
            throw ControlError.unavailable("\(error); set [firmware] trusted_keys in tetherd's configuration")
        }
        // Rule 1 of the runner, first: an image that does not verify is not even copied.
        let verdict = ImageVerifier.inspect(image, trustedKeys: keys)
        guard verdict.isVerified else {
            throw ControlError.imageRefused(FirmwareUpdateProcedure.Failure.refused(verdict.refusal).description)
        }
        let path = keptPath(of: image)
        let started: FirmwareUpdateRunner.Started
        do {
            started = try await runner.start(device: device, image: image, verdict: verdict, imagePath: path, options: procedureOptions)
        } catch {
            throw Self.controlError(error)
        }
        do {
            try keep(image, at: path)
        } catch {
            await runner.abandon(started, because: error.message)
            throw error
        }
        logger.notice(
            "firmware update started",
            metadata: ["uid": "\(started.record.uid)", "device": "\(started.record.address)", "version": "\(started.record.imageVersion)"])
        let task = Task { await self.follow(started) }
        running.withLock { $0[started.record.uid] = task }
        return ControlRecords.firmwareUpdate(started.record)
    }

    func list(device: String, limit: UInt32) throws(DBusError) -> DBusValue {
        let address: String? = device.isEmpty ? nil : device.uppercased()
        let records: [FirmwareUpdateRecord]
        do {
            records = try runner.journal.history(address: address, limit: limit == 0 ? 50 : Int(min(limit, 1000)))
        } catch {
            throw ControlError.from(error)
        }
        return ControlRecords.list(records.map { ControlRecords.firmwareUpdate($0) })
    }

    /// `FirmwareCommand`: one image command on a device (FirmwareDeviceCommands); its slots after it ([] for reset).
    func command(device: String, command name: String, arguments: [String: DBusValue]) async throws(DBusError) -> DBusValue {
        let command = try Self.command(name, arguments)
        let commands = FirmwareDeviceCommands(gateway: runner.gateway, journal: runner.journal, settings: runner.settings)
        let state: SMPImageState?
        do {
            state = try await commands.run(command, device: device)
        } catch {
            switch error {
            case .busy(let reason): throw ControlError.busy(reason)
            case .gateway(let gateway): throw Self.controlError(gateway)
            case .store(let store): throw ControlError.from(store)
            case .device(let device): throw ControlError.unavailable(device.description)
            }
        }
        logger.notice("firmware \(name)", metadata: ["device": "\(device)"])
        return state.map(ControlRecords.firmwareSlots) ?? ControlRecords.list([])
    }

    /// `FirmwareCommand`'s command and arguments: `hash` (ay, 32 bytes: an image's SHA256 TLV hash) for test, and
    /// optionally for confirm; nothing else.
    static func command(_ name: String, _ arguments: [String: DBusValue]) throws(DBusError) -> FirmwareDeviceCommands.Command {
        var hash: [UInt8]?
        for (key, value) in arguments {
            guard key == "hash" else { throw ControlError.invalidArgument("unknown argument \(key); known: hash") }
            guard let bytes = value.bytesValue, bytes.count == 32 else {
                throw ControlError.invalidArgument("hash must be 32 bytes (an image's SHA256 TLV hash)")
            }
            hash = bytes
        }
        switch name {
        case "list", "reset", "erase":
            guard hash == nil else { throw ControlError.invalidArgument("\(name) takes no hash") }
            return name == "list" ? .list : name == "reset" ? .reset : .erase
        case "test":
            guard let hash else { throw ControlError.invalidArgument("test needs the hash of the image to test") }
            return .test(hash: hash)
        case "confirm":
            return .confirm(hash: hash)
        default:
            throw ControlError.invalidArgument("unknown command \(name); known: list, test, confirm, reset, erase")
        }
    }

    /// Rules 4–5 of the runner for a started update, reported as signals; then it is forgotten here.
    private func follow(_ started: FirmwareUpdateRunner.Started) async {
        let (uid, address, hub) = (started.record.uid, started.record.address, hub)
        var record = started.record
        var message: String?
        var running: String?
        do {
            let (finished, ended) = try await runner.complete(started) { event in
                hub.current?.firmwareProgress(ControlRecords.firmwareProgress(uid: uid, device: address, event))
            }
            record = finished
            switch ended {
            case .confirmed(let version), .runningInTest(let version), .alreadyRunning(let version): running = version
            }
        } catch {
            switch error {
            case .update(let finished, _), .interrupted(let finished): record = finished
            default: break
            }
            message = error.description
        }
        logger.notice(
            "firmware update \(record.phase == .finished ? "finished" : "left unfinished")",
            metadata: ["uid": "\(uid)", "outcome": "\(record.outcome?.rawValue ?? "none")", "message": "\(message ?? "")"])
        hub.current?.firmwareUpdateFinished(ControlRecords.firmwareUpdate(record, runningVersion: running))
        _ = self.running.withLock { $0.removeValue(forKey: uid) }
        pruneKeptImages()
    }

    /// Runner rule 6 at start: every update the journal holds unfinished, once its device is connected (bounded by
    /// `resumeWithin`; one that does not come stays unfinished for the next start).
    func resumeUnfinished(resumeWithin: Duration = .seconds(120)) async {
        let unfinished: [FirmwareUpdateRecord]
        do {
            unfinished = try runner.journal.unfinished()
        } catch {
            logger.error("cannot read the firmware update journal: \(error)")
            return
        }
        pruneKeptImages()
        guard !unfinished.isEmpty else { return }
        await runner.gateway.waitUntilReady()
        // One unfinished update per device (the journal's rule 1): they may resume side by side.
        await withTaskGroup(of: Void.self) { group in
            for record in unfinished { group.addTask { await self.resume(record, within: resumeWithin) } }
        }
    }

    private func resume(_ record: FirmwareUpdateRecord, within limit: Duration) async {
        let metadata: Logger.Metadata = ["uid": "\(record.uid)", "device": "\(record.address)", "phase": "\(record.phase.rawValue)"]
        let deadline = ContinuousClock.now + limit
        while await runner.gateway.device(record.address)?.state != .connected {
            guard ContinuousClock.now < deadline, !Task.isCancelled else {
                if !Task.isCancelled { logger.warning("firmware update not resumed: its device did not connect within \(limit)", metadata: metadata) }
                return
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
        guard let data = FileManager.default.contents(atPath: record.imagePath) else {
            var random = SystemRandomNumberGenerator()
            _ = try? runner.journal.finish(record.uid, .failed, message: "the kept image \(record.imagePath) is gone", at: WallClock.now(), using: &random)
            logger.error("firmware update cannot resume: its kept image is gone", metadata: metadata)
            return
        }
        let keys: TrustedKeys
        do {
            keys = try TrustedKeyDirectory.load(trustedKeys)
        } catch {
            logger.error("firmware update not resumed: \(error)", metadata: metadata)
            return
        }
        var options = FirmwareUpdateProcedure.Options()
        options.leaveInTest = record.leaveInTest
        options.proveFor = .milliseconds(record.proveForMilliseconds)
        do {
            let started = try await runner.resume(record, image: Array(data), trustedKeys: keys, options: options)
            logger.notice("firmware update resumed", metadata: metadata)
            let task = Task { await self.follow(started) }
            running.withLock { $0[record.uid] = task }
            await task.value
        } catch {
            logger.error("firmware update not resumed: \(error)", metadata: metadata)
        }
    }

    /// Stops the updates in flight (tetherd stops): each stays unfinished in the journal where the device left it
    /// (runner rule 5), to be resumed at the next start.
    func cancelAll() async {
        let tasks = running.withLock { Array($0.values) }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }

    /// Rule 1.
    static func read(_ descriptor: OwnedFileDescriptor) throws(DBusError) -> [UInt8] {
        let result: Result<[UInt8], DBusError>? = descriptor.withDescriptor { fd in
            var status = stat()
            guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                return .failure(ControlError.invalidArgument("the image must be a regular file"))
            }
            guard status.st_size > 0, status.st_size <= maximumImageBytes else {
                return .failure(ControlError.invalidArgument("the image holds \(status.st_size) bytes; at most \(maximumImageBytes)"))
            }
            var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
            var offset = 0
            while offset < bytes.count {
                let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, $0.count - offset, off_t(offset)) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return .failure(ControlError.invalidArgument("cannot read the image: \(String(cString: strerror(errno)))")) }
                offset += count
            }
            return .success(bytes)
        }
        guard let result else { throw ControlError.invalidArgument("the image's file descriptor is closed") }
        return try result.get()
    }

    /// Rule 2's name for an image: its SHA-256 in the image directory.
    func keptPath(of image: [UInt8]) -> String {
        (imageDirectory as NSString).appendingPathComponent(Hex.encode(SHA256.hash(data: image)) + ".img")
    }

    /// Rule 2: written whole, then renamed into place, owner-only.
    private func keep(_ image: [UInt8], at path: String) throws(DBusError) {
        let directory = imageDirectory
        let result: Result<Void, DBusError> = keptImages.withLock { _ in
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                if FileManager.default.fileExists(atPath: path) { return .success(()) }
                let partial = path + ".partial"
                guard FileManager.default.createFile(atPath: partial, contents: Data(image), attributes: [.posixPermissions: 0o600]) else {
                    return .failure(ControlError.storageFailed("cannot write \(partial)"))
                }
                try FileManager.default.moveItem(atPath: partial, toPath: path)
                return .success(())
            } catch {
                return .failure(ControlError.storageFailed("cannot keep the image in \(directory): \(error.localizedDescription)"))
            }
        }
        try result.get()
    }

    /// Rule 2's clean-up: removes every kept image (and partial copy) in the image directory that no unfinished
    /// update names. Nothing is removed when the journal cannot be read.
    func pruneKeptImages() {
        let (directory, journal, logger) = (imageDirectory, runner.journal, logger)
        keptImages.withLock { _ in
            guard let unfinished = try? journal.unfinished(),
                let names = try? FileManager.default.contentsOfDirectory(atPath: directory)
            else { return }
            let named = Set(unfinished.map(\.imagePath))
            for name in names where name.hasSuffix(".img") || name.hasSuffix(".img.partial") {
                let path = (directory as NSString).appendingPathComponent(name)
                guard !named.contains(path) else { continue }
                do {
                    try FileManager.default.removeItem(atPath: path)
                } catch {
                    logger.warning("cannot remove the kept firmware image \(path): \(error.localizedDescription)")
                }
            }
        }
    }

    static func options(_ options: [String: DBusValue]) throws(DBusError) -> FirmwareUpdateProcedure.Options {
        var result = FirmwareUpdateProcedure.Options()
        for (key, value) in options {
            switch key {
            case "leave_in_test":
                guard let flag = value.boolValue else { throw ControlError.invalidArgument("leave_in_test must be a boolean") }
                result.leaveInTest = flag
            case "prove_for_ms":
                guard let milliseconds = value.uint32Value, milliseconds <= 3_600_000 else {
                    throw ControlError.invalidArgument("prove_for_ms must be 0 to 3600000")
                }
                result.proveFor = .milliseconds(milliseconds)
            case "come_back_within_ms":
                guard let milliseconds = value.uint32Value, (1_000...3_600_000).contains(milliseconds) else {
                    throw ControlError.invalidArgument("come_back_within_ms must be 1000 to 3600000")
                }
                result.comeBackWithin = .milliseconds(milliseconds)
            default:
                throw ControlError.invalidArgument("unknown option \(key); known: leave_in_test, prove_for_ms, come_back_within_ms")
            }
        }
        return result
    }

    static func controlError(_ error: FirmwareUpdateRunner.Failure) -> DBusError {
        switch error {
        case .refused: ControlError.imageRefused(error.description)
        case .busy(let reason): ControlError.busy(reason)
        case .gateway(let gateway): controlError(gateway)
        case .store(let store): ControlError.from(store)
        case .update, .interrupted: ControlError.unavailable(error.description)
        }
    }

    /// The gateway's refusal to hold a device for an update or a command, as the control API names it.
    static func controlError(_ error: GatewayError) -> DBusError {
        switch error {
        case .unknownDevice(let device): ControlError.unknownDevice(device)
        case .notPermitted(let reason): ControlError.notPermitted(reason)
        default: ControlError.unavailable(error.description)
        }
    }
}
