import MCUbootImage
import SMP

/// The update of one device to one image, sans-I/O: facts in, orders out, whatever carries the requests (UDP in
/// `FirmwareUDPUpdate`, BLE through `FirmwareUpdateTransport`). In the order that never leaves a device on an image
/// that has not proved it runs (issue 16, "The update flow"; mcumgr-android PR#18: confirm the running slot only
/// after checking its hash). Everything that decides the next step lives in this file:
///  1. The image was verified against the trusted keys before anything is sent: an untrusted image never leaves.
///     Then read the device's state: when the image already runs, confirmed, there is nothing to do; when it runs on
///     test, go straight to 5 (uploading it again would be refused: it is the active image).
///  2. Upload it (ImageUploader: parameters read, up to buf_count − 1 requests in flight, resume by `sha`).
///  3. Mark its SHA256 TLV hash for test, reset the device.
///  4. Wait for the device to come back (it reboots and MCUboot swaps; over BLE the link drops and is connected
///     again), then read its state.
///  5. The running image's hash is the new one → let it prove itself: it must keep running, on test, for
///     `proveFor`, and then still be the image the device runs. An image that crashes in that time is reset by the
///     device's watchdog, and MCUboot, finding it unconfirmed, goes back to the previous one (MCUboot's design,
///     "Swap: test" and "revert"): confirming it at once would have made the crash permanent. Then confirm it
///     (unless asked to leave it in test) and check that the device says so. Any other running image → the device
///     reverted: a failure of its own.
public struct FirmwareUpdateProcedure: Sendable {
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
        case device(FirmwareTransportError)
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

    /// What the transport does next; each order but `finish` is answered with one `Fact`.
    public enum Order: Hashable, Sendable {
        /// Read the image state → `.state`.
        case readState
        /// Upload the image with ImageUploader → `.uploaded`.
        case upload
        /// Mark the image with this hash for test → `.state`.
        case markForTest(hash: [UInt8])
        /// Reset the device → `.done`.
        case reset
        /// Wait until the device answers again and read its state → `.state`, or `.didNotComeBack` after `within`.
        case awaitDevice(within: Duration)
        /// Let this much time pass → `.done`.
        case wait(Duration)
        /// Confirm the running image → `.state`.
        case confirm
        case finish(Result<Outcome, Failure>)
    }

    public enum Fact: Hashable, Sendable {
        case state(SMPImageState)
        case uploaded(seconds: Double)
        case done
        case didNotComeBack
        /// The order could not be carried out.
        case failed(FirmwareTransportError)
    }

    public struct Step: Hashable, Sendable {
        public var events: [Event]
        public var order: Order
    }

    /// What the procedure waits for, with the data of that phase.
    enum Phase: Hashable, Sendable {
        case notStarted
        case readingState
        case uploading
        case markingForTest
        case resetting
        /// `proven`: the wait of rule 5 is behind (the read that follows it), so the next step is the confirmation.
        case awaitingDevice(proven: Bool)
        case proving
        case confirming(version: String)
        case finished
    }

    public let verdict: ImageVerdict
    public let imageSize: Int
    public let options: Options
    private var phase: Phase = .notStarted

    public init(verdict: ImageVerdict, imageSize: Int, options: Options) {
        self.verdict = verdict
        self.imageSize = imageSize
        self.options = options
    }

    /// Rule 1.
    public mutating func start() -> Step {
        guard case .notStarted = phase else { return finish(.failure(.device(.transport("the update was started twice")))) }
        guard verdict.isVerified, let hash = verdict.statedHash, let version = verdict.header?.version.description else {
            return finish(.failure(.refused(verdict.refusal)))
        }
        phase = .readingState
        return Step(events: [.verified(version: version, hash: hash)], order: .readState)
    }

    public mutating func handle(_ fact: Fact) -> Step {
        let hash = verdict.statedHash ?? []
        switch (phase, fact) {
        case (.readingState, .state(let state)):
            guard let running = state.images.first(where: { $0.active && $0.hash == hash }) else {
                phase = .uploading
                return Step(events: [], order: .upload)  // rule 2
            }
            if running.confirmed { return finish(.success(.alreadyRunning(version: running.version)), events: [.running(running)]) }
            return proveOrConfirm(running, events: [.running(running)])
        case (.uploading, .uploaded(let seconds)):
            phase = .markingForTest
            return Step(events: [.uploaded(bytes: imageSize, seconds: seconds)], order: .markForTest(hash: hash))  // rule 3
        case (.markingForTest, .state):
            phase = .resetting
            return Step(events: [.markedForTest], order: .reset)
        case (.resetting, .done):
            phase = .awaitingDevice(proven: false)
            return Step(events: [.resetSent], order: .awaitDevice(within: options.comeBackWithin))  // rule 4
        case (.awaitingDevice(let proven), .state(let state)):
            guard let running = state.images.first(where: { $0.active }) else {
                return finish(.failure(.reverted(runningVersion: "no active image", runningHash: nil)))
            }
            guard running.hash == hash else {
                return finish(.failure(.reverted(runningVersion: running.version, runningHash: running.hash)), events: [.running(running)])
            }
            if proven {
                phase = .confirming(version: running.version)
                return Step(events: [.running(running)], order: .confirm)
            }
            return proveOrConfirm(running, events: [.running(running)])
        case (.awaitingDevice, .didNotComeBack):
            return finish(.failure(.didNotComeBack))
        case (.proving, .done):
            // A device that crashed meanwhile may still be rebooting: wait for it as after the reset.
            phase = .awaitingDevice(proven: true)
            return Step(events: [], order: .awaitDevice(within: options.comeBackWithin))
        case (.confirming(let version), .state(let state)):
            guard state.images.contains(where: { $0.active && $0.confirmed && $0.hash == hash }) else { return finish(.failure(.notConfirmed)) }
            return finish(.success(.confirmed(version: version)), events: [.confirmed])
        case (.notStarted, _), (.readingState, _), (.uploading, _), (.markingForTest, _), (.resetting, _), (.awaitingDevice, _),
            (.proving, _), (.confirming, _), (.finished, _):
            if case .failed(let error) = fact { return finish(.failure(.device(error))) }
            return finish(.failure(.device(.transport("\(fact) does not answer the update's step (\(phase))"))))
        }
    }

    /// Rule 5, for the image running with the new hash.
    private mutating func proveOrConfirm(_ running: SMPImageSlotState, events: [Event]) -> Step {
        if options.leaveInTest { return finish(.success(.runningInTest(version: running.version)), events: events) }
        guard options.proveFor > .zero else {
            phase = .confirming(version: running.version)
            return Step(events: events, order: .confirm)
        }
        phase = .proving
        return Step(events: events + [.proving(seconds: Self.seconds(options.proveFor))], order: .wait(options.proveFor))
    }

    /// A duration in seconds, for the events and the waits.
    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private mutating func finish(_ result: Result<Outcome, Failure>, events: [Event] = []) -> Step {
        phase = .finished
        return Step(events: events, order: .finish(result))
    }
}

extension FirmwareUpdateProcedure.Event {
    /// The event an order of the uploader reports, if it is one to report (its parameters, its progress).
    init?(_ order: UploadOrder) {
        switch order {
        case .parameters(let parameters): self = .parameters(parameters)
        case .progress(let progress): self = .progress(progress)
        case .write, .finished, .failed: return nil
        }
    }
}
