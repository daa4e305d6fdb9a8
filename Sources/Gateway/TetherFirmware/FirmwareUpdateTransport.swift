import Crypto
import SMP

/// What `FirmwareUpdateProcedure` needs from a transport that suspends rather than blocks (BLE through BlueZ:
/// `FirmwareBluetoothTransport`). Each method carries out one of the procedure's orders; how a device "comes back"
/// after its reset is the transport's to say (over BLE: the link drops, and is connected again).
public protocol FirmwareUpdateTransport: AnyObject {
    func imageState() async throws(FirmwareTransportError) -> SMPImageState
    /// Uploads the image, reporting the uploader's parameters and progress.
    func upload(_ image: [UInt8], configuration: ImageUploader.Configuration, observe: (UploadOrder) -> Void)
        async throws(FirmwareTransportError)
    func test(hash: [UInt8]) async throws(FirmwareTransportError) -> SMPImageState
    func reset() async throws(FirmwareTransportError)
    /// The device's state once it answers again after a reset; nil when it has not within `limit`.
    func awaitDevice(within limit: Duration) async throws(FirmwareTransportError) -> SMPImageState?
    func confirm() async throws(FirmwareTransportError) -> SMPImageState
}

extension FirmwareUpdateProcedure {
    /// Runs the procedure to its end over `transport`, reporting each event to `observe`.
    public mutating func run(
        image: [UInt8], over transport: some FirmwareUpdateTransport, observe: (Event) -> Void = { _ in }
    ) async throws(Failure) -> Outcome {
        var step = start()
        while true {
            step.events.forEach(observe)
            if case .finish(let result) = step.order { return try result.get() }
            step = handle(await Self.carry(step.order, image: image, options: options, over: transport, observe: observe))
        }
    }

    private static func carry(
        _ order: Order, image: [UInt8], options: Options, over transport: some FirmwareUpdateTransport, observe: (Event) -> Void
    ) async -> Fact {
        // A cancelled update stops before its next order: the proving wait in particular must not end early into a
        // confirmation (the caller leaves the update unfinished and resumes it later).
        if Task.isCancelled { return .failed(.transport("cancelled before \(order)")) }
        do {
            switch order {
            case .readState: return .state(try await transport.imageState())
            case .upload:
                let started = ContinuousClock.now
                try await transport.upload(image, configuration: options.uploader) { order in Event(order).map(observe) }
                return .uploaded(seconds: seconds(started.duration(to: .now)))
            case .markForTest(let hash): return .state(try await transport.test(hash: hash))
            case .reset:
                try await transport.reset()
                return .done
            case .awaitDevice(let limit): return try await transport.awaitDevice(within: limit).map(Fact.state) ?? .didNotComeBack
            case .wait(let duration):
                try? await Task.sleep(for: duration)
                return .done
            case .confirm: return .state(try await transport.confirm())
            case .finish: return .failed(.transport("nothing to carry out after the end"))
            }
        } catch {
            return .failed(error)
        }
    }
}
