import ArgumentParser
import Foundation
import MCUbootImage
import SMP
import TetherFirmware
import TetherPrimitives

extension FirmwareCommand {
    /// `tether firmware update DEVICE... IMAGE` through tetherd, or `tether firmware update --udp HOST:PORT
    /// [--udp HOST:PORT ...] IMAGE` directly; `[--keys DIR] [--leave-in-test] [--prove-for S] [--max-failures N] [--json]`.
    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "update",
            abstract: "Verify, upload, test, reset and confirm a firmware image on devices (through tetherd, or over UDP).",
            discussion: """
                Name devices tetherd serves (serial or address), then the image: tetherd verifies it against its own \
                trusted keys ([firmware] trusted_keys) and refuses one that does not verify before anything is sent; \
                it takes the device from its normal session for the update and gives it back after. The update runs \
                in tetherd: if this command is interrupted, the update goes on (`tether firmware updates` shows it).

                With --udp the devices are reached over the network instead, without tetherd, and IMAGE is verified \
                here against --keys.

                Either way: the image is uploaded (up to buf_count - 1 requests in flight), marked for test, and the \
                device is reset. Once the device answers again its running image is read: only when that is the new \
                image, by its SHA256 TLV hash, and it kept running for --prove-for seconds, is it confirmed.

                Several devices are updated one after another, each line (and each JSON object, as "device") says \
                which, and a summary ends the run. After --max-failures devices failed or reverted, the rest are not \
                touched.

                Exit status: 0 the new image runs on every device (confirmed, or on test with --leave-in-test); 1 \
                the image was refused (before any device was reached), or a device failed or stopped answering; 2 \
                usage; 6 devices came back on their old image (reverts) and none failed otherwise.
                """)

        @OptionGroup var connection: BusOptions

        @Option(
            name: .customLong("udp"),
            help: ArgumentHelp("A device's SMP UDP address (port 1337 when omitted); repeat for several.", valueName: "host:port"))
        var udp: [String] = []

        @Flag(name: .customLong("smp-v1"), help: "Speak the original SMP (v1) instead of SMP v2 (with --udp).")
        var smpV1 = false

        @Argument(
            help: ArgumentHelp(
                "The devices tetherd updates (serial or address), then the image (imgtool's signed .bin); with --udp, the image alone.",
                valueName: "device... image"))
        var operands: [String] = []

        @Option(
            help: ArgumentHelp("Directory of trusted public keys, with --udp (default \(TrustedKeyDirectory.defaultPath)).", valueName: "dir"))
        var keys: String?

        @Flag(help: "Leave the new image on test: MCUboot reverts it at the next reset unless it is confirmed.")
        var leaveInTest = false

        @Option(
            help: ArgumentHelp(
                "How long the new image must keep running on test before it is confirmed (0: at once).", valueName: "seconds"))
        var proveFor = 10

        @Option(help: ArgumentHelp("With several devices: stop after this many failed or reverted.", valueName: "n"))
        var maxFailures = 1

        @Flag(help: "Print each step as one JSON object per line.")
        var json = false

        var image: String { operands.last ?? "" }

        func validate() throws {
            if udp.isEmpty {
                guard operands.count >= 2 else {
                    throw ValidationError("Name the devices and then the image (tether firmware update DEVICE IMAGE), or a device with --udp HOST:PORT.")
                }
                guard keys == nil else { throw ValidationError("--keys is for --udp; tetherd verifies with its own [firmware] trusted_keys.") }
            } else {
                guard operands.count == 1 else { throw ValidationError("With --udp, name only the image (the devices are the --udp addresses).") }
            }
            for address in udp where UDPTarget(parsing: address) == nil {
                throw ValidationError("--udp wants HOST:PORT, [IPv6]:PORT or HOST, not '\(address)'.")
            }
            guard maxFailures >= 1 else { throw ValidationError("--max-failures must be at least 1.") }
            guard (0...3600).contains(proveFor) else { throw ValidationError("--prove-for must be 0 to 3600 seconds.") }
        }

        func run() async throws {
            if udp.isEmpty {
                try await FirmwareDaemonUpdate(command: self).run()
            } else {
                try runOverUDP()
            }
        }

        private func runOverUDP() throws {
            let targets = udp.compactMap(UDPTarget.init(parsing:))
            let (bytes, trusted) = try readImageAndKeys(image: image, keys: keys)
            let update = FirmwareUDPUpdate(image: bytes, trustedKeys: trusted)
            // Refused once, before any device is reached (FirmwareUDPUpdate rule 1 would refuse it per device).
            if !update.verdict.isVerified {
                throw firmwareFailure("\(FirmwareUDPUpdate.Failure.refused(update.verdict.refusal))", TetherExitCode.operationFailed)
            }
            let several = targets.count > 1
            var batch = FirmwareBatch(devices: targets.count, maxFailures: maxFailures)
            for target in targets where batch.goesOn {
                batch.record(updateOne(update, target: target, label: several ? target.description : nil))
            }
            if several {
                Output.line(json ? FirmwareUpdateText.json(batch) : "summary: \(batch.summary)")
            }
            if batch.exitStatus != 0 { throw ExitCode(batch.exitStatus) }
        }

        /// One device: its steps printed (labelled when there are several), its failure on standard error.
        private func updateOne(_ update: FirmwareUDPUpdate, target: UDPTarget, label: String?) -> FirmwareBatch.Result {
            var options = FirmwareUDPUpdate.Options()
            options.leaveInTest = leaveInTest
            options.proveFor = .seconds(proveFor)
            var lastPercent = -1
            var rate = UploadRate()
            let started = ContinuousClock.now
            func say(_ text: String) { Output.line(label.map { "\($0): \(text)" } ?? text) }
            do {
                let outcome = try update.run(
                    target: target, configuration: SMPUDPSession.configuration(version: smpV1 ? .v1 : .v2), options: options
                ) { event in
                    if case .progress(let progress) = event {
                        rate.record(confirmedBytes: progress.confirmedBytes, elapsed: ContinuousClock.now - started)
                        let percent = progress.totalBytes == 0 ? 100 : progress.confirmedBytes * 100 / progress.totalBytes
                        guard percent / 10 != lastPercent / 10 else { return }  // a line per 10 %
                        lastPercent = percent
                    }
                    if json { Output.line(FirmwareUpdateText.json(event, rate: rate, device: label)) } else { say(FirmwareUpdateText.line(event, rate: rate)) }
                }
                if json { Output.line(FirmwareUpdateText.json(outcome, device: label)) } else { say(FirmwareUpdateText.line(outcome)) }
                return .updated
            } catch {
                _ = firmwareFailure("\(target): \(error)", TetherExitCode.operationFailed)
                if case .reverted = error { return .reverted }
                return .failed
            }
        }
    }
}

/// How `update` reports its steps.
enum FirmwareUpdateText {
    static func line(_ event: FirmwareUDPUpdate.Event, rate: UploadRate = UploadRate()) -> String {
        switch event {
        case .verified(let version, let hash): return "verified: \(version), hash \(Hex.encode(hash))"
        case .parameters(let parameters): return "device: buf_size \(parameters.bufferSize), buf_count \(parameters.bufferCount)"
        case .progress(let progress):
            let percent = progress.totalBytes == 0 ? 100 : progress.confirmedBytes * 100 / progress.totalBytes
            var line = "upload: \(progress.confirmedBytes)/\(progress.totalBytes) bytes (\(percent) %)"
            if let speed = rate.bytesPerSecond { line += ", \(String(format: "%.1f", speed / 1000)) kB/s" }
            if let left = rate.secondsLeft(totalBytes: progress.totalBytes), progress.confirmedBytes < progress.totalBytes {
                line += ", about \(Self.duration(left)) left"
            }
            return line
        case .uploaded(let bytes, let seconds):
            return "uploaded: \(bytes) bytes in \(String(format: "%.2f", seconds)) s (\(String(format: "%.1f", Double(bytes) / 1000 / max(seconds, 1e-6))) kB/s)"
        case .markedForTest: return "marked for test"
        case .resetSent: return "reset"
        case .running(let slot): return "running: \(slot.version)\(slot.confirmed ? " (confirmed)" : " (on test)")"
        case .proving(let seconds): return "proving: the new image must keep running for \(Self.duration(seconds)) before it is confirmed"
        case .confirmed: return "confirmed"
        }
    }

    /// `42 s`, `3 min 5 s`, `1 h 2 min`: rounded up, as a technician reads a wait.
    static func duration(_ seconds: Double) -> String {
        let whole = Int(min(seconds.rounded(.up), 359_999))
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }

    static func line(_ outcome: FirmwareUDPUpdate.Outcome) -> String {
        switch outcome {
        case .confirmed(let version): return "done: \(version) runs, confirmed"
        case .alreadyRunning(let version): return "done: \(version) already runs, confirmed (nothing sent)"
        case .runningInTest(let version): return "done: \(version) runs on test (not confirmed)"
        }
    }

    static func json(_ outcome: FirmwareUDPUpdate.Outcome, device: String? = nil) -> String {
        var object: [String: Any]
        switch outcome {
        case .confirmed(let version): object = ["outcome": "confirmed", "version": version]
        case .alreadyRunning(let version): object = ["outcome": "already-running", "version": version]
        case .runningInTest(let version): object = ["outcome": "test", "version": version]
        }
        object["device"] = device
        return serialized(object)
    }

    static func json(_ batch: FirmwareBatch) -> String {
        var counts = ["updated": 0, "reverted": 0, "failed": 0]
        for result in batch.results { counts[result.rawValue, default: 0] += 1 }
        counts["notTried"] = batch.notTried
        return serialized(["summary": counts, "devices": batch.devices])
    }

    static func json(_ event: FirmwareUDPUpdate.Event, rate: UploadRate = UploadRate(), device: String? = nil) -> String {
        var object: [String: Any]
        switch event {
        case .verified(let version, let hash): object = ["phase": "verified", "version": version, "hash": Hex.encode(hash)]
        case .parameters(let parameters): object = ["phase": "parameters", "bufSize": parameters.bufferSize, "bufCount": parameters.bufferCount]
        case .progress(let progress):
            var fields: [String: Any] = ["phase": "upload", "bytes": progress.confirmedBytes, "total": progress.totalBytes]
            fields["bytesPerSecond"] = rate.bytesPerSecond.map { ($0 * 10).rounded() / 10 }
            fields["secondsLeft"] = rate.secondsLeft(totalBytes: progress.totalBytes).map { ($0 * 10).rounded() / 10 }
            object = fields
        case .uploaded(let bytes, let seconds): object = ["phase": "uploaded", "bytes": bytes, "seconds": seconds]
        case .markedForTest: object = ["phase": "test"]
        case .resetSent: object = ["phase": "reset"]
        case .running(let slot):
            object = ["phase": "running", "version": slot.version, "confirmed": slot.confirmed, "hash": slot.hash.map { Hex.encode($0) } as Any]
        case .proving(let seconds): object = ["phase": "proving", "seconds": seconds]
        case .confirmed: object = ["phase": "confirmed"]
        }
        object["device"] = device
        return serialized(object)
    }

    private static func serialized(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
