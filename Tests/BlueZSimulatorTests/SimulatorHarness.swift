import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import Glibc
import Synchronization
import TetherTestSupport

/// A private bus, a simulator on it (the generated configuration: Tether-0001 just works, -0002 passkey,
/// -0003 confirmation) and a client connection, as a gateway would have.
struct SimulatorHarness {
    let bus: DBusPrivateBus
    let simulator: BlueZSimulator
    let client: DBusConnection

    static let adapter: DBusObjectPath = "/org/bluez/hci0"
    static let firstDevice: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01"
    static let passkeyDevice: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_02"
    static let tetherService: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0010"
    static let rx: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0010/char0011"
    static let tx: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0010/char0013"
    static let cccd: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0010/char0013/desc0015"

    static func start(configuration: SimulatorConfiguration = .generated(count: 3, seed: 7)) async throws
        -> SimulatorHarness
    {
        // BlueZTestSupport's shared start (it stops the bus if the simulator fails to start).
        let simulated = try await SimulatedBlueZ.start(configuration: configuration)
        return SimulatorHarness(bus: simulated.bus, simulator: simulated.simulator, client: simulated.connection)
    }

    /// Runs `body` with a fresh harness and always stops it (the dbus-daemon must not outlive the test).
    static func with(
        _ configuration: SimulatorConfiguration = .generated(count: 3, seed: 7),
        _ body: (SimulatorHarness) async throws -> Void
    ) async throws {
        let harness = try await start(configuration: configuration)
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    func stop() async {
        await client.close()
        await simulator.stop()
        bus.stop()
    }

    func bluez(
        _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    ) async throws -> [DBusValue] {
        // Generous: a Connect the strictness tests slow to 6 s took over 10 s on a machine loaded by CI and a soak.
        try await client.call(
            destination: "org.bluez", path: path, interface: interface, member: member, arguments: arguments,
            timeout: .seconds(30))
    }

    func property(_ path: DBusObjectPath, _ interface: String, _ name: String) async throws -> DBusValue? {
        try await bluez(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])
            .first?.unwrappingVariants
    }

    func control(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await client.call(
            destination: "org.bluez", path: "/io/tether/simulator", interface: "io.tether.Simulator1",
            member: member, arguments: arguments, timeout: .seconds(30))
    }

    func managedObjects() async throws -> [String: [String: [String: DBusValue]]] {
        let reply = try await bluez("/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        var result: [String: [String: [String: DBusValue]]] = [:]
        for object in reply.first?.dictionaryEntries ?? [] {
            guard let path = object.key.objectPathValue else { continue }
            var interfaces: [String: [String: DBusValue]] = [:]
            for interface in object.value.dictionaryEntries ?? [] {
                interfaces[interface.key.stringValue ?? ""] = interface.value.variantDictionaryValue ?? [:]
            }
            result[path.rawValue] = interfaces
        }
        return result
    }

    /// Starts discovery, waits until `device` is exported, stops discovery.
    func discover(_ device: DBusObjectPath = firstDevice) async throws {
        _ = try await bluez(Self.adapter, "org.bluez.Adapter1", "StartDiscovery")
        try await waitUntil("\(device) exported", seconds: 30) { try await managedObjects()[device.rawValue] != nil }
        _ = try await bluez(Self.adapter, "org.bluez.Adapter1", "StopDiscovery")
    }

    func connect(_ device: DBusObjectPath = firstDevice) async throws {
        _ = try await bluez(device, "org.bluez.Device1", "Connect")
        try await waitUntil("ServicesResolved", seconds: 30) {
            try await property(device, "org.bluez.Device1", "ServicesResolved")?.boolValue == true
        }
    }

    /// Every signal the simulator emits, in arrival order.
    func record() async throws -> SignalRecorder {
        let stream = try await client.signals(matching: DBusMatchRule(sender: "org.bluez"))
        return SignalRecorder(stream)
    }
}

final class SignalRecorder: Sendable {
    private final class Storage: Sendable {
        let signals = Mutex<[DBusSignal]>([])
    }

    private let received = Storage()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<DBusSignal>) {
        let received = self.received
        task = Task {
            for await signal in stream {
                received.signals.withLock { $0.append(signal) }
            }
        }
    }

    deinit {
        task.cancel()
    }

    var signals: [DBusSignal] { received.signals.withLock { $0 } }

    /// Waits until some recorded signal satisfies `match`; returns its index.
    @discardableResult
    func waitFor(_ what: String, seconds: Double = 30, _ match: (DBusSignal) -> Bool) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let index = signals.firstIndex(where: match) { return index }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw WaitTimeout(what: what)
    }
}

extension DBusSignal {
    /// For PropertiesChanged: the changed properties; nil for other signals.
    var changedProperties: [String: DBusValue]? {
        guard member == "PropertiesChanged", arguments.count == 3 else { return nil }
        return arguments[1].variantDictionaryValue
    }

    var invalidatedProperties: [String] {
        guard member == "PropertiesChanged", arguments.count == 3 else { return [] }
        return arguments[2].stringsValue ?? []
    }

    func changes(_ name: String, to value: DBusValue, at objectPath: DBusObjectPath) -> Bool {
        path == objectPath && changedProperties?[name] == value
    }

    /// For InterfacesAdded: the object path and its interface names.
    var addedObject: (path: DBusObjectPath, interfaces: [String: [String: DBusValue]])? {
        guard member == "InterfacesAdded", arguments.count == 2, let path = arguments[0].objectPathValue else {
            return nil
        }
        var interfaces: [String: [String: DBusValue]] = [:]
        for entry in arguments[1].dictionaryEntries ?? [] {
            interfaces[entry.key.stringValue ?? ""] = entry.value.variantDictionaryValue ?? [:]
        }
        return (path, interfaces)
    }
}

/// Reads one SOCK_SEQPACKET packet, waiting at most `milliseconds`; nil on timeout or EOF. Polls without blocking:
/// the simulator runs in this process on the same small cooperative pool.
func receivePacket(_ fd: Int32, milliseconds: Int = 3000) async throws -> [UInt8]? {
    let deadline = ContinuousClock.now + .milliseconds(milliseconds)
    while ContinuousClock.now < deadline {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&poller, 1, 0) == 1 {
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            return count > 0 ? Array(buffer[0..<count]) : nil
        }
        try await Task.sleep(for: .milliseconds(5))
    }
    return nil
}

func sendPacket(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
}
