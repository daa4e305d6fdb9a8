import Foundation
import LinkProtocol
import TetherStore
import TetherPrimitives

/// The gateway half of the crash test: real `LinkSession`s, a real `GroupCommitter` over a real database file,
/// and a pipe instead of BLE. It reads link facts on stdin and writes the gateway's writes on stdout (the
/// `CrashLine` protocol), in real time, until stdin closes or it is killed.
///
/// Everything a daemon does with a session is here in small: sessions seeded from the store by BLE address,
/// persist actions through group commit with `persisted` called only from the commit's completion, timers,
/// and the address recorded once DEVICE_INFO names the device.
public enum CrashGateway {
    public static func run(databasePath: String) async throws {
        let database = try GatewayDatabase(path: databasePath)
        let service = ConsumptionService(database: database)
        let committer = GroupCommitter(service: service)
        let checkpoints = Task { await database.runCheckpoints() }
        defer { checkpoints.cancel() }
        let (inputs, continuation) = AsyncStream.makeStream(of: Input.self)

        let reader = Thread {
            var buffer = LineBuffer()
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(STDIN_FILENO, &chunk, chunk.count)
                guard count > 0 else { break }
                for line in buffer.append(chunk[0..<count]) { continuation.yield(.line(line)) }
            }
            continuation.yield(.endOfInput)
        }
        reader.start()
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(2))
                continuation.yield(.tick)
            }
        }
        defer { ticker.cancel() }

        var runtime = Runtime(service: service, registry: DeviceRegistry(database: database), committer: committer, inputs: continuation)
        Output.write("\(CrashLine.ready)\n")
        for await input in inputs {
            guard runtime.handle(input) else { break }
            runtime.flush()
        }
    }

    enum Input: Sendable {
        case line(String)
        case endOfInput
        case tick
        case committed(device: Int, batch: PersistBatch.ID, Result<BatchOutcome, StoreError>)
    }

    struct Device {
        var session: LinkSession
        var address: String
        var timers: [LinkTimer: Timestamp] = [:]
    }

    struct Runtime {
        let service: ConsumptionService
        let registry: DeviceRegistry
        let committer: GroupCommitter
        let inputs: AsyncStream<Input>.Continuation
        var devices: [Int: Device] = [:]
        var output = ""
        var random = SystemRandomNumberGenerator()

        init(service: ConsumptionService, registry: DeviceRegistry, committer: GroupCommitter, inputs: AsyncStream<Input>.Continuation) {
            self.service = service
            self.registry = registry
            self.committer = committer
            self.inputs = inputs
        }

        /// `false` when the run is over.
        mutating func handle(_ input: Input) -> Bool {
            let now = WallClock.now()
            switch input {
            case .endOfInput:
                return false
            case .tick:
                for index in devices.keys.sorted() {
                    guard let device = devices[index] else { continue }
                    for (timer, deadline) in device.timers where deadline <= now {
                        devices[index]?.timers[timer] = nil
                        perform(index) { $0.timerFired(timer, at: now) }
                    }
                }
            case .committed(let index, let batch, .success(let outcome)):
                perform(index) { $0.persisted(batch, at: now) }
                for key in outcome.storedEvents + outcome.duplicateEvents {
                    output += CrashLine.stored(device: index, key: key).text + "\n"
                }
                if let config = outcome.configToApply { perform(index) { $0.desiredConfigChanged(config, at: now) } }
            case .committed(let index, let batch, .failure(let error)):
                FileHandle.standardError.write(Data("batch \(batch) of device \(index) not stored: \(error)\n".utf8))
                perform(index) { $0.persistFailed(batch, reason: error.storageFailure, at: now) }
            case .line(let text):
                switch CrashLine(text) {
                case .connect(let index, let mtu, let address)?:
                    if devices[index] == nil {
                        var configuration = LinkSessionConfiguration()
                        configuration.timeSyncSpacing = .milliseconds(20)
                        let seed = (try? service.sessionSeed(address: address)) ?? nil
                        devices[index] = Device(
                            session: LinkSession(configuration: configuration, history: seed?.history ?? DeviceHistory(), clock: seed?.clock ?? DeviceClock()),
                            address: address)
                    }
                    perform(index) { $0.connected(mtu: mtu, at: now) }
                case .received(let index, let bytes)?:
                    perform(index) { $0.received(bytes, at: now) }
                case .disconnected(let index)?:
                    perform(index) { $0.disconnected(at: now) }
                case .ready?, .write?, .stored?, .gatewayDisconnect?, nil:
                    FileHandle.standardError.write(Data("unexpected input line: \(text)\n".utf8))
                }
            }
            return true
        }

        mutating func flush() {
            guard !output.isEmpty else { return }
            Output.write(output)
            output = ""
        }

        private mutating func perform(_ index: Int, _ step: (inout LinkSession) -> [LinkAction]) {
            guard var device = devices[index] else { return }
            let actions = step(&device.session)
            devices[index] = device
            for action in actions {
                switch action {
                case .write(let bytes):
                    output += CrashLine.write(device: index, bytes: bytes).text + "\n"
                case .persist(let batch):
                    let inputs = inputs
                    // §8.2: the session hears `persisted` only from the completion, after the commit returned.
                    committer.submit(batch) { result in inputs.yield(.committed(device: index, batch: batch.id, result)) }
                case .armTimer(let timer, let deadline):
                    devices[index]?.timers[timer] = deadline
                case .cancelTimer(let timer):
                    devices[index]?.timers[timer] = nil
                case .disconnect:
                    // The link is dropped at once; what `disconnected` returns is timer cancellations, done here.
                    output += CrashLine.gatewayDisconnect(device: index).text + "\n"
                    _ = devices[index]?.session.disconnected(at: WallClock.now())
                    devices[index]?.timers = [:]
                case .report(.negotiated(_, let info)):
                    do {
                        try registry.recordAddress(device.address, serial: info.serial, at: WallClock.now(), using: &random)
                    } catch {
                        FileHandle.standardError.write(Data("address of \(info.serial) not recorded: \(error)\n".utf8))
                    }
                case .report:
                    break
                }
            }
        }
    }
}

/// Unbuffered writes to stdout: a line is in the pipe when `write` returns, so a SIGKILL loses nothing written.
enum Output {
    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(STDOUT_FILENO, base + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }  // the reader is gone; so is the run
                offset += written
            }
        }
    }
}
