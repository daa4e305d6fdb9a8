import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import LinkProtocol
import Synchronization
import TetherTestSupport

/// A private bus, the simulator on it (Tether-0001 just works, -0002 passkey, -0003 confirmation) and a BlueZ
/// client session, as the gateway would have. The same pattern as the simulator's own tests.
struct BlueZHarness {
    let bus: DBusPrivateBus
    let simulator: BlueZSimulator
    let connection: DBusConnection
    let session: BlueZSession
    let adapter: Adapter

    static let firstDevice: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01"
    static let passkeyDevice: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_02"
    static let rx: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0010/char0011"
    static let tx: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0010/char0013"
    static let alertLevel: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0030/char0031"
    static let txUUID = "54455448-0003-4c1e-8e5a-7a3d2f1b0c00"
    static let rxUUID = "54455448-0002-4c1e-8e5a-7a3d2f1b0c00"
    static let serviceUUID = "54455448-0001-4c1e-8e5a-7a3d2f1b0c00"

    /// Link protocol §7.1: HELLO versions 1…2, window 16, as the gateway sends it.
    static let hello = LinkMessage.hello(Hello(versions: 1...2, window: 16)).frame(
        version: 1, sequence: SequenceNumber(0))

    static func with(
        _ configuration: SimulatorConfiguration = .generated(count: 3, seed: 7),
        _ body: (BlueZHarness) async throws -> Void
    ) async throws {
        // The private bus, the simulator and a client connection: BlueZTestSupport's shared start.
        let simulated = try await SimulatedBlueZ.start(configuration: configuration)
        let session = BlueZSession(connection: simulated.connection)
        let harness = BlueZHarness(
            bus: simulated.bus, simulator: simulated.simulator, connection: simulated.connection, session: session,
            adapter: Adapter(session: session))
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    func stop() async {
        await connection.close()
        await simulator.stop()
        bus.stop()
    }

    var firstDevice: Device { Device(session: session, path: Self.firstDevice) }

    func inject(_ kind: String, _ options: [String: DBusValue] = [:]) async throws {
        _ = try await connection.call(
            destination: "org.bluez", path: "/io/tether/simulator", interface: "io.tether.Simulator1",
            member: "InjectFault", arguments: [.string(kind), .variantDictionary(options)], timeout: .seconds(10))
    }

    /// Runs discovery until `device` is exported (bounded), then stops it.
    func discover(_ device: DBusObjectPath = firstDevice) async throws {
        let tree = BlueZObjectTree(session: session)
        let recorder = EventRecorder(await tree.events())
        let running = Task { try await tree.run() }
        defer { running.cancel() }
        try await recorder.waitFor("synchronized") { if case .synchronized = $0 { true } else { false } }
        if await tree.devices[device] == nil {
            try await adapter.startDiscovery()
            try await recorder.waitFor("\(device) added") { $0.addedDevice == device }
            try await adapter.stopDiscovery()
        }
    }

    /// Every signal from org.bluez, in arrival order.
    func recordSignals() async throws -> Recorder<DBusSignal> {
        Recorder(try await connection.signals(matching: DBusMatchRule(sender: "org.bluez")))
    }
}

typealias EventRecorder = Recorder<BlueZObjectTree.Event>

/// Collects a stream's elements so a test can wait for one, bounded.
final class Recorder<Element: Sendable>: Sendable {
    private final class Storage: Sendable {
        let elements = Mutex<[Element]>([])
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let storage = storage
        task = Task {
            for await element in stream { storage.elements.withLock { $0.append(element) } }
        }
    }

    deinit {
        task.cancel()
    }

    var elements: [Element] { storage.elements.withLock { $0 } }

    /// Waits until some element satisfies `match`; returns its index.
    @discardableResult
    func waitFor(_ what: String, after earlier: Int? = nil, seconds: Double = 30, _ match: (Element) -> Bool)
        async throws -> Int
    {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            let seen = elements
            let start = earlier.map { $0 + 1 } ?? 0
            if start < seen.count, let index = seen[start...].firstIndex(where: match) { return index }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw WaitTimeout(what: what)
    }
}

extension BlueZObjectTree.Event {
    var addedDevice: DBusObjectPath? {
        if case .deviceAdded(let path, _) = self { path } else { nil }
    }

    var removedDevice: DBusObjectPath? {
        if case .deviceRemoved(let path) = self { path } else { nil }
    }
}

extension DBusSignal {
    func changes(_ name: String, to value: DBusValue, at objectPath: DBusObjectPath) -> Bool {
        guard path == objectPath, member == "PropertiesChanged", arguments.count == 3 else { return false }
        return arguments[1].variantDictionaryValue?[name] == value
    }
}

/// Decodes link-protocol frames from notification values.
func decodeFrames(_ packets: [[UInt8]]) throws -> [Frame] {
    var decoder = FrameDecoder()
    var frames: [Frame] = []
    for packet in packets {
        decoder.append(packet)
        while let frame = try decoder.decode() { frames.append(frame) }
    }
    return frames
}

/// Reads values from `stream` until they decode to at least one frame, bounded by `seconds`.
func firstFrame(from stream: NotificationBatches, seconds: Double = 30) async throws -> Frame {
    try await withThrowingTaskGroup(of: Frame?.self) { group in
        group.addTask {
            var packets: [[UInt8]] = []
            for await batch in stream {
                packets.append(contentsOf: batch)
                if let frame = try decodeFrames(packets).first { return frame }
            }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let frame = first else { throw WaitTimeout(what: "a frame") }
        return frame
    }
}

/// Drains `stream` until it finishes, bounded by `seconds`.
func waitUntilFinished(_ stream: NotificationBatches, seconds: Double = 30) async throws {
    let finished = try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await _ in stream {}
            return true
        }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return false
        }
        defer { group.cancelAll() }
        return try await group.next() ?? false
    }
    if !finished { throw WaitTimeout(what: "the notification stream to finish") }
}

