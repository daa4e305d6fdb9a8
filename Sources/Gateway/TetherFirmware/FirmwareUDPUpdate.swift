import Crypto
import Foundation
import MCUbootImage
import SMP

/// `tether firmware update --udp`: one device, one image, in the order that never leaves a device on an image that
/// has not proved it runs (issue 16, "The update flow"; mcumgr-android PR#18: confirm the running slot only after
/// checking its hash):
///  1. Verify the image against the trusted keys, before a socket is opened: an untrusted image never leaves.
///     Then read the device's state: when the image already runs, confirmed, there is nothing to do; when it runs on
///     test, go straight to 5 (uploading it again would be refused: it is the active image).
///  2. Upload it with the ImageUploader (parameters read, up to buf_count − 1 requests in flight, resume by `sha`).
///  3. Mark its SHA256 TLV hash for test, reset the device.
///  4. Wait for the device to answer again (it reboots and MCUboot swaps), then read its state.
///  5. The running image's hash is the new one → let it prove itself: it must keep running, on test, for
///     `proveFor`, and then still be the image the device runs. An image that crashes in that time is reset by the
///     device's watchdog, and MCUboot, finding it unconfirmed, goes back to the previous one (MCUboot's design,
///     "Swap: test" and "revert"): confirming it at once would have made the crash permanent. Then confirm it
///     (unless asked to leave it in test) and check that the device says so. Any other running image → the device
///     reverted: a failure of its own.
public struct FirmwareUDPUpdate: Sendable {
    public struct Options: Hashable, Sendable {
        /// Leave the new image in test (MCUboot reverts it at the next reset unless something confirms it).
        public var leaveInTest = false
        /// How long the device may take to answer again after the reset (its reboot and MCUboot's swap).
        public var comeBackWithin: Duration = .seconds(90)
        /// How long the new image must keep running, on test, before it is confirmed (rule 5). Zero confirms it as
        /// soon as it answers.
        public var proveFor: Duration = .seconds(10)
        public var uploader = ImageUploader.Configuration()

        public init() {}
    }

    public enum Event: Hashable, Sendable {
        case verified(version: String, hash: [UInt8])
        case parameters(SMPParameters)
        case progress(UploadProgress)
        case uploaded(bytes: Int, seconds: Double)
        case markedForTest
        case resetSent
        case running(SMPImageSlotState)
        /// Rule 5's wait began: the image must keep running this long before it is confirmed.
        case proving(seconds: Double)
        case confirmed
    }

    public enum Outcome: Hashable, Sendable {
        /// The new image runs and is confirmed: permanent.
        case confirmed(version: String)
        /// The new image runs on test (`leaveInTest`).
        case runningInTest(version: String)
        /// The device already ran the image, confirmed: nothing was sent.
        case alreadyRunning(version: String)
    }

    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The image did not verify: nothing was sent.
        case refused(ImageRefusal?)
        case device(FirmwareUDPError)
        /// The device came back on another image (the new one did not boot, or crashed before it could be confirmed).
        case reverted(runningVersion: String, runningHash: [UInt8]?)
        /// After the reset, no answer within `comeBackWithin`.
        case didNotComeBack
        /// The device accepted the confirmation but still reports the image unconfirmed.
        case notConfirmed

        public var description: String {
            switch self {
            case .refused(let refusal?): return "refused the image before sending it: \(refusal)"
            case .refused(nil): return "refused the image before sending it: not signed by a trusted key"
            case .device(let error): return error.description
            case .reverted(let version, _): return "the device reverted: it runs \(version), not the new image"
            case .didNotComeBack: return "the device did not answer after the reset"
            case .notConfirmed: return "the device did not confirm the new image"
            }
        }
    }

    public let image: [UInt8]
    public let verdict: ImageVerdict

    /// Rule 1: verifies now; `run` refuses an image that did not verify.
    public init(image: [UInt8], trustedKeys: TrustedKeys) {
        self.image = image
        self.verdict = ImageVerifier.inspect(image, trustedKeys: trustedKeys)
    }

    public func run(
        target: UDPTarget, configuration: SMPClient.Configuration = SMPUDPSession.configuration(), options: Options = Options(),
        observe: (Event) -> Void = { _ in }
    ) throws(Failure) -> Outcome {
        guard verdict.isVerified, let hash = verdict.statedHash, let version = verdict.header?.version.description else {
            throw .refused(verdict.refusal)
        }
        observe(.verified(version: version, hash: hash))
        let client: FirmwareUDPClient
        do {
            client = try FirmwareUDPClient(target: target, configuration: configuration)
        } catch {
            throw .device(error)
        }
        let before: SMPImageState
        do {
            before = try client.imageState()
        } catch {
            throw .device(error)
        }
        if let running = before.images.first(where: { $0.active && $0.hash == hash }) {
            observe(.running(running))
            if running.confirmed { return .alreadyRunning(version: running.version) }
            return try confirm(running, hash: hash, client: client, options: options, observe: observe)
        }
        // Rule 2.
        var uploaderConfiguration = options.uploader
        uploaderConfiguration.client = configuration
        var uploader = ImageUploader(image: image, sha256: Array(SHA256.hash(data: image)), configuration: uploaderConfiguration)
        let started = ContinuousClock.now
        do {
            try client.session.drive(&uploader) { order in
                switch order {
                case .parameters(let parameters): observe(.parameters(parameters))
                case .progress(let progress): observe(.progress(progress))
                case .write, .finished, .failed: break
                }
            }
        } catch {
            throw .device(error)
        }
        let elapsed = started.duration(to: .now)
        observe(.uploaded(bytes: image.count, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        // Rule 3.
        do {
            _ = try client.test(hash: hash)
            observe(.markedForTest)
            try client.reset()
            observe(.resetSent)
        } catch {
            throw .device(error)
        }
        // Rule 4.
        let state = try waitForDevice(client, within: options.comeBackWithin)
        guard let running = state.images.first(where: { $0.active }) else { throw .reverted(runningVersion: "no active image", runningHash: nil) }
        observe(.running(running))
        // Rule 5.
        guard running.hash == hash else { throw .reverted(runningVersion: running.version, runningHash: running.hash) }
        return try confirm(running, hash: hash, client: client, options: options, observe: observe)
    }

    /// Rule 5, for the image running with the new hash.
    private func confirm(
        _ running: SMPImageSlotState, hash: [UInt8], client: FirmwareUDPClient, options: Options, observe: (Event) -> Void
    ) throws(Failure) -> Outcome {
        if options.leaveInTest { return .runningInTest(version: running.version) }
        if options.proveFor > .zero {
            let seconds = Double(options.proveFor.components.seconds) + Double(options.proveFor.components.attoseconds) / 1e18
            observe(.proving(seconds: seconds))
            Thread.sleep(forTimeInterval: seconds)
            // A device that crashed meanwhile may still be rebooting: wait for it as after the reset.
            let state = try waitForDevice(client, within: options.comeBackWithin)
            guard let now = state.images.first(where: { $0.active }) else { throw .reverted(runningVersion: "no active image", runningHash: nil) }
            observe(.running(now))
            guard now.hash == hash else { throw .reverted(runningVersion: now.version, runningHash: now.hash) }
        }
        let confirmed: SMPImageState
        do {
            confirmed = try client.confirm(hash: nil)
        } catch {
            throw .device(error)
        }
        guard confirmed.images.contains(where: { $0.active && $0.confirmed && $0.hash == hash }) else { throw .notConfirmed }
        observe(.confirmed)
        return .confirmed(version: running.version)
    }

    /// Rule 4: state reads, each with the client's retries, until one is answered or the time is up.
    private func waitForDevice(_ client: FirmwareUDPClient, within limit: Duration) throws(Failure) -> SMPImageState {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while true {
            do {
                return try client.imageState()
            } catch .client(.timedOut) {
                guard ContinuousClock.now < deadline else { throw .didNotComeBack }
            } catch {
                throw .device(error)
            }
        }
    }
}
