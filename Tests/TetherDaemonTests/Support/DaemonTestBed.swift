import BlueZSimulator
import DBus
import Foundation
import Testing
import TetherTestSupport

/// A private bus with tether-sim (in this process) and a real `tetherd` child process on it, as the demo runs
/// them: BlueZ and the control API on the same private bus, the database in a temporary directory.
final class DaemonTestBed: @unchecked Sendable {
    let directory: TemporaryDirectory
    let bus: DBusPrivateBus
    let simulator: BlueZSimulator
    let connection: DBusConnection
    let client: GatewayClient
    private(set) var daemon: DaemonProcess?
    private var starts = 0

    var databasePath: String { directory.file("gateway.sqlite") }

    static let justWorks = "C0:54:45:00:00:01"

    /// Devices `Tether-0001`… with the given pairing modes.
    static func simulatorConfiguration(_ modes: [PairingMode]) -> SimulatorConfiguration {
        var configuration = SimulatorConfiguration.generated(count: modes.count, seed: 11)
        for index in modes.indices { configuration.devices[index].pairing = modes[index] }
        return configuration
    }

    init(simulator configuration: SimulatorConfiguration) async throws {
        directory = try TemporaryDirectory()
        bus = try await DBusPrivateBus.start()
        do {
            simulator = try await BlueZSimulator.start(configuration: configuration, bus: .address(bus.address))
            connection = try await DBusConnection.connect(to: .address(bus.address))
        } catch {
            bus.stop()
            directory.remove()
            throw error
        }
        client = GatewayClient(connection: connection)
    }

    /// Writes the configuration (with `extra` TOML appended) and starts tetherd; returns once it answers.
    @discardableResult
    func startDaemon(extra: String = "", environment: [String: String] = [:], logLevel: String = "info") async throws -> DaemonProcess {
        starts += 1
        let configuration = try directory.write("tether-\(starts).toml", """
            [gateway]
            database = "\(databasePath)"
            state_directory = "\(directory.path)"
            [bluetooth]
            bus = "\(bus.address)"
            backoff_initial = "200ms"
            backoff_max = "2s"
            [control]
            bus = "\(bus.address)"
            [log]
            level = "\(logLevel)"
            \(extra.contains("[metrics]") ? "" : "[metrics]\nenabled = false")
            \(extra)
            """)
        let process = try DaemonProcess(
            arguments: ["--config", configuration], environment: environment, log: directory.file("tetherd-\(starts).log"))
        daemon = process
        try await client.waitForDaemon(process)
        return process
    }

    /// SIGTERM and wait for a clean exit (status 0).
    func stopDaemon() async throws {
        guard let daemon else { return }
        daemon.signal(SIGTERM)
        let status = try await daemon.waitForExit(timeout: .seconds(90))
        #expect(status == 0, "tetherd exited with \(status); log:\n\(daemon.logText)")
        self.daemon = nil
    }

    /// Pairs through the control API; `prompt` is where the caller's PairingPrompt1 object would be.
    func pair(_ address: String, prompt: DBusObjectPath = "/io/tether/test/prompt") async throws -> [String: DBusValue] {
        let reply = try await client.call("Pair", [.string(address), .objectPath(prompt)], timeout: .seconds(120))
        return try #require(reply.first?.variantDictionaryValue)
    }

    func waitUntilConnected(_ serials: [String]) async throws {
        try await waitUntil("\(serials) connected; log:\n\(daemon?.logText ?? "")", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
            let devices = try await client.devices()
            return serials.allSatisfy { devices[$0]?["state"]?.stringValue == "connected" }
        }
    }

    func device(_ address: String) async throws -> SimulatedDevice {
        let path = DBusObjectPath("/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_"))
        return try #require(await simulator.device(at: path))
    }

    /// The user takes `count` hits on a device (tether-sim's io.tether.Simulator1.RecordHits); returns how many
    /// the firmware recorded.
    func recordHits(_ address: String, _ count: UInt32) async throws -> Int {
        let path = DBusObjectPath("/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_"))
        let reply = try await connection.call(
            destination: "org.bluez", path: "/io/tether/simulator", interface: "io.tether.Simulator1", member: "RecordHits",
            arguments: [.objectPath(path), .uint32(count)], timeout: .seconds(10))
        return Int(reply.first?.uint32Value ?? 0)
    }

    /// tether-sim's view of a device (io.tether.Simulator1.GetStatistics): connected, paired, ….
    func statistics(_ address: String) async throws -> [String: DBusValue] {
        let path = DBusObjectPath("/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_"))
        let reply = try await connection.call(
            destination: "org.bluez", path: "/io/tether/simulator", interface: "io.tether.Simulator1", member: "GetStatistics",
            arguments: [.objectPath(path)], timeout: .seconds(10))
        return try #require(reply.first?.variantDictionaryValue)
    }

    func shutdown() async {
        daemon?.kill()
        daemon = nil
        await connection.close()
        await simulator.stop()
        bus.stop()
        directory.remove()
    }

    /// Runs `body` with a test bed and always tears it down.
    static func with(_ modes: [PairingMode], _ body: (DaemonTestBed) async throws -> Void) async throws {
        try await with(simulator: simulatorConfiguration(modes), body)
    }

    /// Runs `body` with a test bed on this simulator configuration and always tears it down (printing tetherd's log
    /// when the body fails).
    static func with(simulator configuration: SimulatorConfiguration, _ body: (DaemonTestBed) async throws -> Void) async throws {
        let bed = try await DaemonTestBed(simulator: configuration)
        do {
            try await body(bed)
        } catch {
            if let daemon = bed.daemon { print("tetherd log:\n\(daemon.logText)") }
            await bed.shutdown()
            throw error
        }
        await bed.shutdown()
    }
}
