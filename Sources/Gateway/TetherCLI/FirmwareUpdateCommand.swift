import ArgumentParser
import Foundation
import MCUbootImage
import SMP
import TetherFirmware

extension FirmwareCommand {
    /// `tether firmware update --udp HOST:PORT IMAGE [--keys DIR] [--leave-in-test] [--json]`.
    struct Update: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "update",
            abstract: "Verify, upload, test, reset and confirm a firmware image on a device reached over UDP.",
            discussion: """
                IMAGE is verified against the trusted keys first (as `inspect` does); an image that does not verify \
                is refused before anything is sent. Then it is uploaded (up to buf_count - 1 requests in flight), \
                marked for test, and the device is reset. Once the device answers again its running image is read: \
                only when that is the new image, by its SHA256 TLV hash, is it confirmed.

                Exit status: 0 the new image runs (confirmed, or on test with --leave-in-test); 1 the image was \
                refused or the device failed or stopped answering; 2 usage; 6 the device came back on its old image \
                (a revert).
                """)

        @OptionGroup var device: UDPDeviceOptions

        @Argument(help: ArgumentHelp("The image file (imgtool's signed .bin).", valueName: "image"))
        var image: String

        @Option(help: ArgumentHelp("Directory of trusted public keys (default \(KeyDirectory.defaultPath)).", valueName: "dir"))
        var keys: String?

        @Flag(help: "Leave the new image on test: MCUboot reverts it at the next reset unless it is confirmed.")
        var leaveInTest = false

        @Flag(help: "Print each step as one JSON object per line.")
        var json = false

        func run() throws {
            guard let target = UDPTarget(parsing: device.udp) else { throw TetherExitCode.badInput }
            let (bytes, trusted) = try readImageAndKeys(image: image, keys: keys)
            var options = FirmwareUDPUpdate.Options()
            options.leaveInTest = leaveInTest
            let update = FirmwareUDPUpdate(image: bytes, trustedKeys: trusted)
            var lastPercent = -1
            var rate = UploadRate()
            let started = ContinuousClock.now
            do {
                let outcome = try update.run(
                    target: target, configuration: SMPUDPSession.configuration(version: device.smpV1 ? .v1 : .v2), options: options
                ) { event in
                    if case .progress(let progress) = event {
                        rate.record(confirmedBytes: progress.confirmedBytes, elapsed: ContinuousClock.now - started)
                        let percent = progress.totalBytes == 0 ? 100 : progress.confirmedBytes * 100 / progress.totalBytes
                        guard percent / 10 != lastPercent / 10 else { return }  // a line per 10 %
                        lastPercent = percent
                    }
                    Output.line(json ? FirmwareUpdateText.json(event, rate: rate) : FirmwareUpdateText.line(event, rate: rate))
                }
                switch outcome {
                case .confirmed(let version): Output.line(json ? #"{"outcome":"confirmed","version":"\#(version)"}"# : "done: \(version) runs, confirmed")
                case .alreadyRunning(let version):
                    Output.line(json ? #"{"outcome":"already-running","version":"\#(version)"}"# : "done: \(version) already runs, confirmed (nothing sent)")
                case .runningInTest(let version):
                    Output.line(json ? #"{"outcome":"test","version":"\#(version)"}"# : "done: \(version) runs on test (not confirmed)")
                }
            } catch {
                if case .reverted = error { throw firmwareFailure("\(target): \(error)", TetherExitCode.firmwareReverted) }
                throw firmwareFailure("\(target): \(error)", TetherExitCode.operationFailed)
            }
        }
    }
}

/// How `update` reports its steps.
enum FirmwareUpdateText {
    static func line(_ event: FirmwareUDPUpdate.Event, rate: UploadRate = UploadRate()) -> String {
        switch event {
        case .verified(let version, let hash): return "verified: \(version), hash \(FirmwareVerdictText.hexString(hash))"
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

    static func json(_ event: FirmwareUDPUpdate.Event, rate: UploadRate = UploadRate()) -> String {
        let object: [String: Any]
        switch event {
        case .verified(let version, let hash): object = ["phase": "verified", "version": version, "hash": FirmwareVerdictText.hexString(hash)]
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
            object = ["phase": "running", "version": slot.version, "confirmed": slot.confirmed, "hash": slot.hash.map(FirmwareVerdictText.hexString) as Any]
        case .confirmed: object = ["phase": "confirmed"]
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
