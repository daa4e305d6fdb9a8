import ArgumentParser
import ControlContract
import DBus
import Foundation
import Glibc
import SMP
import Synchronization
import TetherControlClient
import TetherFirmware

/// `tether firmware update DEVICE... IMAGE` through tetherd (docs/specs/control-api.md, "Firmware updates"): the image
/// goes to tetherd as an open file descriptor, tetherd verifies and runs the update, and this follows its
/// `FirmwareProgress` signals to the `FirmwareUpdateFinished` of the update it started.
///
///  1. Subscribed before `UpdateFirmware` is called, so no step of the update can be missed; signals of other updates
///     (another technician's) are skipped by uid.
///  2. Bounded by silence, not length: an update may prove itself for up to an hour, but tetherd reports each step,
///     so nothing heard for `--prove-for` plus five minutes means tetherd or its device is stuck.
///  3. A tetherd that restarts resumes the update under the same uid (the journal keeps it), and this command
///     follows it there: the signal match names tetherd's well-known name, which the bus resolves to whoever owns it.
///     tetherd gone from the bus for `absenceLimit` ends the wait: it resumes the update whenever it starts again.
struct FirmwareDaemonUpdate {
    let command: FirmwareCommand.Update
    /// Rule 3: long enough for a restart (systemd's Restart= waits 5 s by default), short enough to tell a stop.
    static let absenceLimit = Duration.seconds(30)

    func run() async throws {
        let descriptor = open(command.image, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw firmwareFailure("cannot read \(command.image): \(String(cString: strerror(errno)))", TetherExitCode.badInput)
        }
        let image = OwnedFileDescriptor(taking: descriptor)
        defer { image.close() }
        let devices = Array(command.operands.dropLast())
        let several = devices.count > 1
        var batch = FirmwareBatch(devices: devices.count, maxFailures: command.maxFailures)
        try await command.connection.withGateway { client in
            for device in devices where batch.goesOn {
                batch.record(try await updateOne(client: client, device: device, image: image, label: several ? device : nil))
            }
        }
        if several {
            Output.line(command.json ? FirmwareUpdateText.json(batch) : "summary: \(batch.summary)")
        }
        if batch.exitStatus != 0 { throw ExitCode(batch.exitStatus) }
    }

    private var options: [String: DBusValue] {
        ["leave_in_test": .bool(command.leaveInTest), "prove_for_ms": .uint32(UInt32(command.proveFor * 1000))]
    }

    /// One device. A refusal of the image ends the whole run (the next device would be refused the same).
    private func updateOne(client: GatewayClient, device: String, image: OwnedFileDescriptor, label: String?) async throws
        -> FirmwareBatch.Result
    {
        // Rule 1.
        let progress = try await client.signals(.firmwareProgress)
        let finished = try await client.signals(.firmwareUpdateFinished)
        let started: GatewayRecord
        do {
            started = try await client.updateFirmware(device: device, image: image, options: options)
        } catch GatewayControlError.daemon(.imageRefused, let message) {
            throw firmwareFailure(message, TetherExitCode.operationFailed)
        } catch GatewayControlError.daemon(let name, let message) where name != .unavailable {
            _ = firmwareFailure("\(device): \(message)", TetherExitCode.operationFailed)
            return .failed
        }
        guard let uid = started.string("uid") else {
            _ = firmwareFailure("\(device): tetherd's answer names no update", TetherExitCode.operationFailed)
            return .failed
        }
        let (events, feed) = AsyncStream.makeStream(of: FollowedSignal.self)
        let feeders = [
            Task { for await signal in progress { feed.yield(.progress(signal)) } },
            Task { for await signal in finished { feed.yield(.finished(signal)) } },
        ]
        defer { feeders.forEach { $0.cancel() } }
        // Rule 2.
        let silence = Duration.seconds(command.proveFor + 300)
        // One watchdog for the whole update: each step heard moves its deadline on.
        let lastHeard = Mutex(ContinuousClock.now)
        let watchdog = Task {
            while !Task.isCancelled {
                let deadline = lastHeard.withLock { $0 } + silence
                if ContinuousClock.now >= deadline {
                    feed.yield(.silence)
                    return
                }
                try await Task.sleep(until: deadline, clock: .continuous)
            }
        }
        defer { watchdog.cancel() }
        // Rule 3.
        let presence = Task {
            var absentSince: ContinuousClock.Instant?
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                if try await client.isDaemonRunning() {
                    absentSince = nil
                } else if let since = absentSince {
                    if ContinuousClock.now - since >= Self.absenceLimit { feed.yield(.daemonGone) }
                } else {
                    absentSince = .now
                    standardError("tether: tetherd left the bus during update \(uid); waiting up to \(Self.absenceLimit) for it to resume it")
                }
            }
        }
        defer { presence.cancel() }
        var rate = UploadRate()
        var lastPercent = -1
        let clock = ContinuousClock.now
        func say(_ text: String) { Output.line(label.map { "\($0): \(text)" } ?? text) }
        for await followed in events {
            switch followed {
            case .daemonGone:
                _ = firmwareFailure(
                    "\(device): tetherd stopped during update \(uid) and has not come back; it resumes the update when it starts again (`tether firmware updates` shows it)",
                    TetherExitCode.operationFailed)
                return .failed
            case .silence:
                _ = firmwareFailure("\(device): nothing heard of update \(uid) for \(silence); `tether firmware updates \(device)` shows where it is", TetherExitCode.operationFailed)
                return .failed
            case .progress(let signal):
                let record = GatewayRecord(signal.arguments.first?.variantDictionaryValue ?? [:])
                guard record.string("uid") == uid, let event = FirmwareProgressText.event(record) else { continue }
                lastHeard.withLock { $0 = .now }
                if case .progress(let upload) = event {
                    rate.record(confirmedBytes: upload.confirmedBytes, elapsed: ContinuousClock.now - clock)
                    let percent = upload.totalBytes == 0 ? 100 : upload.confirmedBytes * 100 / upload.totalBytes
                    guard percent / 10 != lastPercent / 10 else { continue }  // a line per 10 %
                    lastPercent = percent
                }
                if command.json { Output.line(FirmwareUpdateText.json(event, rate: rate, device: label)) } else { say(FirmwareUpdateText.line(event, rate: rate)) }
            case .finished(let signal):
                let record = GatewayRecord(signal.arguments.first?.variantDictionaryValue ?? [:])
                guard record.string("uid") == uid else { continue }
                return report(record, device: device, label: label)
            }
        }
        return .failed
    }

    /// The end of one device's update, as the UDP path prints it.
    private func report(_ record: GatewayRecord, device: String, label: String?) -> FirmwareBatch.Result {
        let version = record.string("running_version") ?? record.string("image_version") ?? "?"
        let outcome: FirmwareUpdateProcedure.Outcome
        switch record.string("outcome") {
        case "confirmed": outcome = .confirmed(version: version)
        case "running-in-test": outcome = .runningInTest(version: version)
        case "already-running": outcome = .alreadyRunning(version: version)
        case let other:
            _ = firmwareFailure("\(device): \(record.string("message") ?? other ?? "the update ended without an outcome")", TetherExitCode.operationFailed)
            return other == "reverted" ? .reverted : .failed
        }
        if command.json { Output.line(FirmwareUpdateText.json(outcome, device: label)) } else { Output.line((label.map { "\($0): " } ?? "") + FirmwareUpdateText.line(outcome)) }
        return .updated
    }

    enum FollowedSignal: Sendable {
        case progress(DBusSignal)
        case finished(DBusSignal)
        case silence
        case daemonGone
    }
}

/// tetherd's `FirmwareProgress` records (control-api.md) read back into the update procedure's events, so that both
/// paths print the same lines.
enum FirmwareProgressText {
    static func event(_ record: GatewayRecord) -> FirmwareUpdateProcedure.Event? {
        func bytes(_ key: String) -> Int? { record.integer(key).map { Int($0) } }
        func hash(_ key: String) -> [UInt8]? { record.string(key).flatMap(FirmwareSlotText.parseHash) }
        switch record.string("event") {
        case "verified": return .verified(version: record.string("image_version") ?? "?", hash: hash("image_hash") ?? [])
        case "parameters":
            guard let size = bytes("buf_size"), let count = bytes("buf_count") else { return nil }
            return .parameters(SMPParameters(bufferSize: size, bufferCount: count))
        case "progress":
            guard let confirmed = bytes("confirmed_bytes"), let total = bytes("total_bytes") else { return nil }
            return .progress(UploadProgress(confirmedBytes: confirmed, totalBytes: total))
        case "uploaded": return .uploaded(bytes: bytes("total_bytes") ?? 0, seconds: record.double("seconds") ?? 0)
        case "marked-for-test": return .markedForTest
        case "reset-sent": return .resetSent
        case "running":
            var slot = SMPImageSlotState(image: 0, slot: 0, version: record.string("image_version") ?? "?", hash: hash("image_hash"))
            slot.confirmed = record.bool("confirmed") ?? false
            slot.active = true
            return .running(slot)
        case "proving": return .proving(seconds: record.double("seconds") ?? 0)
        case "confirmed": return .confirmed
        default: return nil
        }
    }
}
