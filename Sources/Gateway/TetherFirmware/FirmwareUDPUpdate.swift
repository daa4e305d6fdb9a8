import Crypto
import Foundation
import MCUbootImage
import SMP

/// `tether firmware update --udp`: one device, one image, the steps of `FirmwareUpdateProcedure` carried out over
/// UDP (SMPUDPSession, blocking). The device comes back (rule 4) when a state read is answered again: each read
/// with the client's retries, until `comeBackWithin` has passed.
public struct FirmwareUDPUpdate: Sendable {
    public typealias Options = FirmwareUpdateProcedure.Options
    public typealias Event = FirmwareUpdateProcedure.Event
    public typealias Outcome = FirmwareUpdateProcedure.Outcome
    public typealias Failure = FirmwareUpdateProcedure.Failure

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
        var procedure = FirmwareUpdateProcedure(verdict: verdict, imageSize: image.count, options: options)
        var step = procedure.start()
        var client: FirmwareUDPClient?
        while true {
            step.events.forEach(observe)
            if case .finish(let result) = step.order { return try result.get() }
            // The socket is opened once the image is verified (rule 1), for the first order that needs the device.
            let device: FirmwareUDPClient
            if let client {
                device = client
            } else {
                do {
                    device = try FirmwareUDPClient(target: target, configuration: configuration)
                } catch {
                    throw .device(error)
                }
                client = device
            }
            step = procedure.handle(carry(step.order, on: device, configuration: configuration, options: options, observe: observe))
        }
    }

    /// One order of the procedure, carried out over UDP.
    private func carry(
        _ order: FirmwareUpdateProcedure.Order, on client: FirmwareUDPClient, configuration: SMPClient.Configuration,
        options: Options, observe: (Event) -> Void
    ) -> FirmwareUpdateProcedure.Fact {
        do {
            switch order {
            case .readState: return .state(try client.imageState())
            case .upload:
                var uploaderConfiguration = options.uploader
                uploaderConfiguration.client = configuration
                var uploader = ImageUploader(image: image, sha256: Array(SHA256.hash(data: image)), configuration: uploaderConfiguration)
                let started = ContinuousClock.now
                try client.session.drive(&uploader) { order in Event(order).map(observe) }
                return .uploaded(seconds: FirmwareUpdateProcedure.seconds(started.duration(to: .now)))
            case .markForTest(let hash): return .state(try client.test(hash: hash))
            case .reset:
                try client.reset()
                return .done
            case .awaitDevice(let limit): return try waitForDevice(client, within: limit)
            case .wait(let duration):
                Thread.sleep(forTimeInterval: FirmwareUpdateProcedure.seconds(duration))
                return .done
            case .confirm: return .state(try client.confirm(hash: nil))
            case .finish: return .failed(.transport("nothing to carry out after the end"))
            }
        } catch {
            return .failed(error)
        }
    }

    /// Rule 4: state reads, each with the client's retries, until one is answered or the time is up.
    private func waitForDevice(_ client: FirmwareUDPClient, within limit: Duration) throws(FirmwareTransportError) -> FirmwareUpdateProcedure.Fact {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while true {
            do {
                return .state(try client.imageState())
            } catch .client(.timedOut) {
                guard ContinuousClock.now < deadline else { return .didNotComeBack }
            }
        }
    }
}
