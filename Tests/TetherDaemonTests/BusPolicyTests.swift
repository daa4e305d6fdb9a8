import DBus
import Foundation
import Testing
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// deploy/dbus/io.tether.Gateway.conf on a real dbus-daemon configured like Debian's system bus (deny by
/// default): a user outside root and the `tether` group may read but not change anything.
@Suite(.serialized) struct BusPolicyTests {
    static let policy = ConfigurationTests.repository.appendingPathComponent("deploy/dbus/io.tether.Gateway.conf").path

    /// The system bus's defaults from Debian's /usr/share/dbus-1/system.conf (deny own and method calls, allow
    /// signals and replies), on a private socket, with the project's policy file included.
    static func busConfiguration(socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <deny own="*"/>
            <deny send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_requested_reply="true" send_type="method_return"/>
            <allow send_requested_reply="true" send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
            <allow receive_type="signal"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
          </policy>
          <include>\(policy)</include>
        </busconfig>
        """
    }

    /// `dbus-send` as user `nobody` (uid 65534, no supplementary groups); returns its exit status and output.
    static func callAsNobody(bus: String, member: String, arguments: [String] = []) async throws -> (Int32, String) {
        let result = try await ChildProcess.run(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/dbus-send", "--bus=\(bus)", "--print-reply",
             "--dest=io.tether.Gateway", "/io/tether/Gateway", "io.tether.Gateway1.\(member)"] + arguments,
            timeout: .seconds(60))
        return (result.status, result.standardOutput + result.standardError)
    }

    @Test func anotherUserMayReadButNotChange() async throws {
        try #require(getuid() == 0, "the policy test switches users and must run as root")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // nobody must reach the socket: the directory is world-searchable.
        chmod(directory.path, 0o755)
        let socketPath = directory.file("system_bus_socket")
        let configuration = try directory.write("bus.conf", Self.busConfiguration(socket: socketPath))
        let busLog = directory.file("dbus-daemon.log")
        let bus = try ChildProcess(
            "/usr/bin/dbus-daemon", ["--config-file=\(configuration)", "--nofork", "--nopidfile"], output: .file(busLog))
        defer { bus.kill() }
        try await waitUntil("the bus socket; log:\n\(bus.standardOutput)", seconds: 60, every: .milliseconds(100)) {
            FileManager.default.fileExists(atPath: socketPath)
        }
        let address = "unix:path=\(socketPath)"

        // tetherd as root owns io.tether.Gateway under the policy (BlueZ is absent on this bus; it waits for it).
        let toml = try directory.write("tether.toml", """
            [gateway]
            database = "\(directory.file("gateway.sqlite"))"
            [bluetooth]
            bus = "\(address)"
            [control]
            bus = "\(address)"
            [metrics]
            enabled = false
            """)
        let daemon = try DaemonProcess(arguments: ["--config", toml], log: directory.file("tetherd.log"))
        let root = try await DBusConnection.connect(to: .address(address))
        let client = GatewayClient(connection: root)
        try await client.waitForDaemon(daemon)
        // Root may call a mutating method: it reaches tetherd, which answers on its own terms.
        #expect(try await client.call("RetryDeadLetter", [.string("*")]) == [.uint32(0)])

        let (readStatus, readOutput) = try await Self.callAsNobody(bus: address, member: "GetStatus")
        #expect(readStatus == 0, "\(readOutput)")
        #expect(readOutput.contains("events_stored"))

        let (writeStatus, writeOutput) = try await Self.callAsNobody(
            bus: address, member: "RetryDeadLetter", arguments: ["string:*"])
        #expect(writeStatus != 0)
        #expect(writeOutput.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(writeOutput)")

        let (scanStatus, scanOutput) = try await Self.callAsNobody(bus: address, member: "StartScan")
        #expect(scanStatus != 0)
        #expect(scanOutput.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(scanOutput)")

        // Health: the list of devices is open; a person's readings and a backfill are not.
        let (devicesStatus, devicesOutput) = try await Self.callAsNobody(bus: address, member: "ListHealthDevices")
        #expect(devicesStatus == 0, "\(devicesOutput)")
        #expect(devicesOutput.contains("array ["), "\(devicesOutput)")
        let (samplesStatus, samplesOutput) = try await Self.callAsNobody(
            bus: address, member: "ListHealthSamples", arguments: ["string:C0:54:45:00:00:01"])
        #expect(samplesStatus != 0)
        #expect(samplesOutput.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(samplesOutput)")
        // Deleting or correcting a person's reading is a change like any other: denied to other users.
        for member in ["DeleteHealthSample", "ListHealthDeletions"] {
            let (status, output) = try await Self.callAsNobody(bus: address, member: member, arguments: ["string:0190c4d2-0000-7000-8000-000000000000"])
            #expect(status != 0, "\(member)")
            #expect(output.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(member): \(output)")
        }
        let (backfillStatus, backfillOutput) = try await Self.callAsNobody(
            bus: address, member: "Backfill", arguments: ["string:C0:54:45:00:00:01"])
        #expect(backfillStatus != 0)
        #expect(backfillOutput.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(backfillOutput)")
        // Root reaches ListHealthSamples, which answers on its own terms (no such device here).
        do {
            _ = try await client.call("ListHealthSamples", [.string("C0:54:45:00:00:01"), .variantDictionary([:])])
            Issue.record("expected UnknownDevice")
        } catch let error as DBusError {
            #expect(error.name == "io.tether.Gateway1.Error.UnknownDevice", "\(error)")
        }

        await root.close()
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0, "\(daemon.logText)")
    }

    /// The HealthReading signal carries a person's live readings: the policy denies it to every receiver but root
    /// and the `tether` group. The sender here is this test as root owning io.tether.Gateway, which is what the
    /// policy names; the receiver outside is `gdbus monitor` as user nobody, an ordinary match-rule subscriber.
    @Test func aHealthReadingReachesRootButNoOtherUser() async throws {
        try #require(getuid() == 0, "the policy test switches users and must run as root")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        chmod(directory.path, 0o755)
        let socketPath = directory.file("system_bus_socket")
        let configuration = try directory.write("bus.conf", Self.busConfiguration(socket: socketPath))
        let bus = try ChildProcess(
            "/usr/bin/dbus-daemon", ["--config-file=\(configuration)", "--nofork", "--nopidfile"],
            output: .file(directory.file("dbus-daemon.log")))
        defer { bus.kill() }
        try await waitUntil("the bus socket", seconds: 60, every: .milliseconds(100)) {
            FileManager.default.fileExists(atPath: socketPath)
        }
        let address = "unix:path=\(socketPath)"

        let gateway = try await DBusConnection.connect(to: .address(address))
        let receiver = try await DBusConnection.connect(to: .address(address))
        defer {
            Task { await gateway.close() }
            Task { await receiver.close() }
        }
        #expect(try await gateway.requestName("io.tether.Gateway") == .primaryOwner)
        let rootSees = try await receiver.signals(matching: DBusMatchRule(sender: "io.tether.Gateway", interface: "io.tether.Gateway1"))

        // stdbuf: gdbus prints through stdio, which a file would otherwise buffer until it exits.
        let monitorLog = directory.file("monitor.log")
        let monitor = try ChildProcess(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/stdbuf", "-oL", "/usr/bin/gdbus", "monitor",
             "--address", address, "--dest", "io.tether.Gateway"],
            output: .file(monitorLog))
        defer { monitor.kill() }
        func emit(_ member: String, _ arguments: [DBusValue] = []) throws {
            try gateway.emitSignal(path: "/io/tether/Gateway", interface: "io.tether.Gateway1", member: member, arguments: arguments)
        }
        func monitored() -> String { (try? String(contentsOfFile: monitorLog, encoding: .utf8)) ?? "" }
        // Once nobody's subscription is in place it sees an ordinary signal (the default policy allows signals).
        try await waitUntil("gdbus monitor as nobody to see a signal; it printed: \(monitored())", seconds: 60, every: .milliseconds(200)) {
            try emit("DevicesChanged")
            return monitored().contains("DevicesChanged")
        }
        try emit("HealthReading", [.variantDictionary(["address": .string("C0:54:45:00:10:01"), "value": .string("120")])])
        try emit("Barrier")
        // Signals from one sender arrive in order: once the later one is there, the reading would have been too.
        try await waitUntil("the barrier signal at gdbus monitor", seconds: 60, every: .milliseconds(100)) {
            monitored().contains("Barrier")
        }
        #expect(!monitored().contains("HealthReading"), "nobody received a health reading:\n\(monitored())")

        // Root did receive it: the deny is the policy's, not a signal that never left.
        let members = try await within(.seconds(60), "root to receive the reading") {
            var seen: [String] = []
            for await signal in rootSees {
                seen.append(signal.member)
                if signal.member == "Barrier" { break }
            }
            return seen
        }
        #expect(members.contains("HealthReading"), "\(members)")
    }
}
