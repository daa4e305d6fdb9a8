import BlueZ
import BlueZSimulator
import DBus
import Foundation

/// A private dbus-daemon, tether-sim on it (in this process) and a client connection, as a gateway would have
/// them. Shared by the gateway tests and the benchmark; `with` always stops all three.
public struct SimulatedBlueZ: Sendable {
    public let bus: DBusPrivateBus
    public let simulator: BlueZSimulator
    /// The client's connection (the gateway's, in tests).
    public let connection: DBusConnection

    public static func start(configuration: SimulatorConfiguration) async throws -> SimulatedBlueZ {
        let bus = try await DBusPrivateBus.start()
        do {
            let simulator = try await BlueZSimulator.start(configuration: configuration, bus: .address(bus.address))
            let connection = try await DBusConnection.connect(to: .address(bus.address))
            return SimulatedBlueZ(bus: bus, simulator: simulator, connection: connection)
        } catch {
            bus.stop()
            throw error
        }
    }

    /// Runs `body` with a fresh simulator and always stops it (the dbus-daemon must not outlive the caller).
    public static func with<Result>(
        _ configuration: SimulatorConfiguration, _ body: (SimulatedBlueZ) async throws -> Result
    ) async throws -> Result {
        let simulated = try await start(configuration: configuration)
        do {
            let result = try await body(simulated)
            await simulated.stop()
            return result
        } catch {
            await simulated.stop()
            throw error
        }
    }

    public func stop() async {
        await connection.close()
        await simulator.stop()
        bus.stop()
    }

    /// Another client connection to the same bus (a second gateway, a control client).
    public func connect() async throws -> DBusConnection {
        try await DBusConnection.connect(to: .address(bus.address))
    }

    /// `io.tether.Simulator1.InjectFault(kind, options)`.
    public func inject(_ kind: String, _ options: [String: DBusValue] = [:]) async throws {
        _ = try await control("InjectFault", [.string(kind), .variantDictionary(options)])
    }

    /// The user takes `count` hits on the device at `address`; returns how many the firmware recorded. A reply
    /// without the count throws: read as 0, it would make "stored == recorded" pass with nothing recorded.
    @discardableResult
    public func recordHits(_ address: String, _ count: Int) async throws -> Int {
        let reply = try await control("RecordHits", [.objectPath(Self.devicePath(address)), .uint32(UInt32(count))])
        guard reply.count == 1, let recorded = reply[0].uint32Value else {
            throw MalformedReply(member: "RecordHits", reply: reply)
        }
        return Int(recorded)
    }

    public struct MalformedReply: Error, CustomStringConvertible {
        public let member: String
        public let reply: [DBusValue]
        public var description: String { "io.tether.Simulator1.\(member) answered \(reply), not the expected values" }
    }

    /// `GetStatistics(device)`: connected, paired, notifications_sent, writes_received.
    public func statistics(_ address: String) async throws -> [String: DBusValue] {
        try await control("GetStatistics", [.objectPath(Self.devicePath(address))]).first?.variantDictionaryValue ?? [:]
    }

    public func control(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await connection.call(
            // By the simulator's unique name: org.bluez has no owner while bluetoothd restarts (the fault), and a
            // control call in that window would fail with ServiceUnknown.
            destination: simulator.connection.uniqueName, path: "/io/tether/simulator", interface: "io.tether.Simulator1",
            member: member, arguments: arguments, timeout: .seconds(10))
    }

    public static func devicePath(_ address: String, adapter: DBusObjectPath = "/org/bluez/hci0") -> DBusObjectPath {
        adapter.appending("dev_" + address.uppercased().replacingOccurrences(of: ":", with: "_"))
    }
}
