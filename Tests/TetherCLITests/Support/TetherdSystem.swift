@testable import BlueZSimulator
import DBus
import Foundation
import Glibc
import GRDB
import TetherTestSupport

/// The real system on one private bus, for the CLI's end-to-end tests: a dbus-daemon, the BlueZ simulator,
/// `tether-server` on SQLite and `tetherd` (both the built executables), with the `tether` CLI run against it.
final class TetherdSystem: @unchecked Sendable {
    let directory: String
    let bus: DBusPrivateBus
    let simulator: BlueZSimulator
    private var children: [BackgroundProcess] = []
    private(set) var serverDatabase = ""

    private init(directory: String, bus: DBusPrivateBus, simulator: BlueZSimulator) {
        self.directory = directory
        self.bus = bus
        self.simulator = simulator
    }

    /// `serverFaults` goes to tether-server's --inject-faults (e.g. "422": the first push is refused).
    static func start(devices: [DeviceConfiguration], serverFaults: String? = nil) async throws -> TetherdSystem {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-e2e-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bus = try await DBusPrivateBus.start()
        let simulator = try await BlueZSimulator.start(
            configuration: SimulatorConfiguration(devices: devices, seed: 3), bus: .address(bus.address))
        let system = TetherdSystem(directory: directory, bus: bus, simulator: simulator)
        do {
            try await system.startServer(faults: serverFaults)
            try await system.startDaemon()
        } catch {
            await system.stop()
            throw error
        }
        return system
    }

    private func startServer(faults: String?) async throws {
        let server = try BuiltProducts.require("tether-server")
        serverDatabase = directory + "/server.sqlite"
        let token = try await TetherProcess.run(
            ["token", "create", "--db", serverDatabase, "--tenant", "e2e", "--gateway", "gw", "--output", directory + "/sync.token"],
            executable: server)
        guard token.status == 0 else { throw SystemError("tether-server token create failed: \(token.standardError)") }
        var arguments = ["serve", "--db", serverDatabase, "--listen", "127.0.0.1:0", "--log-level", "warning"]
        if let faults { arguments += ["--inject-faults", faults] }
        let process = try BackgroundProcess(server, arguments, log: directory + "/server.log")
        children.append(process)
        let line = try await process.waitForLine(startingWith: "listening on ", timeout: .seconds(60))
        serverAddress = String(line.dropFirst("listening on ".count))
    }

    private(set) var serverAddress = ""

    /// The committed imgtool images and keys (Tests/MCUbootImageTests/make-images.sh): tetherd trusts `trusted/`.
    static let firmwareFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("MCUbootImageTests/Fixtures").path

    private var daemon: BackgroundProcess?
    private var daemonStarts = 0

    /// Stops tetherd gracefully (SIGTERM, as systemd does), or kills it (SIGKILL: a crash, the OOM killer), and
    /// starts it again on the same configuration and database; each run logs to its own file (`tetherd.log`, then
    /// `tetherd-2.log`, ...).
    func restartDaemon(killing: Bool = false) async throws {
        guard let daemon else { throw SystemError("tetherd is not running") }
        daemon.child.signal(killing ? SIGKILL : SIGTERM)
        let status = try await daemon.child.wait(timeout: .seconds(60))
        guard killing || status == 0 else { throw SystemError("tetherd exited \(status) on SIGTERM: \(log(daemonLog))") }
        try await startDaemon()
    }

    /// The current tetherd's log file name.
    var daemonLog: String { daemonStarts <= 1 ? "tetherd.log" : "tetherd-\(daemonStarts).log" }

    private func startDaemon() async throws {
        let configuration = """
            [gateway]
            database = "\(directory)/gateway.sqlite"
            state_directory = "\(directory)"

            [bluetooth]
            bus = "\(bus.address)"
            backoff_initial = "250ms"
            backoff_max = "2s"

            [sync]
            server_url = "http://\(serverAddress)"
            token_file = "\(directory)/sync.token"
            interval = "1s"

            [firmware]
            trusted_keys = "\(Self.firmwareFixtures)/trusted"

            [control]
            bus = "\(bus.address)"

            [metrics]
            enabled = false

            [log]
            level = "info"
            """
        try configuration.write(toFile: directory + "/tether.toml", atomically: true, encoding: .utf8)
        daemonStarts += 1
        let daemon = try BackgroundProcess(
            try BuiltProducts.require("tetherd"), ["--config", directory + "/tether.toml"], log: directory + "/" + daemonLog)
        children.append(daemon)
        self.daemon = daemon
        do {
            try await waitUntil("tetherd to answer", seconds: 60, every: .milliseconds(200)) {
                guard daemon.isRunning else { throw SystemError("tetherd exited") }
                return try await tether(["status", "--json"]).status == 0
            }
        } catch {
            throw SystemError("tetherd did not come up (\(error)): \(log("tetherd.log"))")
        }
    }

    /// Runs the `tether` CLI against this system's bus.
    func tether(_ arguments: [String], input: String? = nil) async throws -> TetherProcess.Result {
        try await TetherProcess.run(arguments, bus: bus.address, input: input)
    }

    /// `tether ... --json` parsed.
    func json(_ arguments: [String]) async throws -> Any {
        let result = try await tether(arguments + ["--json"])
        guard result.status == 0 else { throw SystemError("tether \(arguments) exited \(result.status): \(result.standardError)") }
        return try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))
    }

    /// Polls `condition` every 250 ms until it holds or 60 s pass; returns whether it held (for `#expect`).
    func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        do {
            try await waitUntil("a condition", seconds: 60, every: .milliseconds(250), condition)
            return true
        } catch is WaitTimeout {
            return false
        }
    }

    /// Whether `tether devices` shows the device with `serial` connected within 60 s (`eventually`): tetherd keeps a
    /// paired device connected and learns its serial once it names itself.
    func connected(_ serial: String) async throws -> Bool {
        try await eventually {
            let devices = (try? await json(["devices"])) as? [[String: Any]] ?? []
            return devices.contains { $0["serial"] as? String == serial && $0["state"] as? String == "connected" }
        }
    }

    /// Consumption events on tether-server, read from its SQLite file.
    func eventsOnServer() throws -> Int {
        let queue = try DatabaseQueue(path: serverDatabase, configuration: { var c = Configuration(); c.readonly = true; return c }())
        return try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM consumption_event") ?? 0 }
    }

    /// The firmware updates tether-server holds, as its operator command `tether-server firmware updates` prints them.
    func firmwareUpdatesOnServer() async throws -> [[String: Any]] {
        let listed = try await TetherProcess.run(
            ["firmware", "updates", "--db", serverDatabase, "--tenant", "e2e"], executable: try BuiltProducts.require("tether-server"))
        guard listed.status == 0 else { throw SystemError("tether-server firmware updates exited \(listed.status): \(listed.standardError)") }
        return listed.standardOutput.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The last 4,000 characters of a log, for a failure's message.
    func log(_ name: String) -> String {
        String(wholeLog(name).suffix(4000))
    }

    /// A whole log, for what a test looks for in it (a line can fall out of `log`'s tail on a slow run).
    func wholeLog(_ name: String) -> String {
        (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? ""
    }

    func stop() async {
        for child in children.reversed() { child.kill() }
        await simulator.stop()
        bus.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    struct SystemError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// A long-running child with its output in a log file; SIGKILLed when done.
final class BackgroundProcess: Sendable {
    let child: ChildProcess
    let logPath: String

    init(_ executable: String, _ arguments: [String], log: String) throws {
        logPath = log
        child = try ChildProcess(executable, arguments, output: .file(log))
    }

    var isRunning: Bool { child.isRunning }

    func waitForLine(startingWith prefix: String, timeout: Duration) async throws -> String {
        var line: String?
        do {
            try await waitUntil("a line '\(prefix)…'", seconds: Double(timeout.components.seconds), every: .milliseconds(100)) {
                line = child.standardOutput.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
                return line != nil || !child.isRunning
            }
        } catch is WaitTimeout {}
        guard let line else {
            throw TetherdSystem.SystemError(
                "no line '\(prefix)…' from \((child.executable as NSString).lastPathComponent): \(child.standardOutput.suffix(2000))")
        }
        return line
    }

    func kill() { child.kill() }
}
