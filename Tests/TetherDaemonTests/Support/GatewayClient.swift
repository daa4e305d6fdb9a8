import DBus
import TetherTestSupport

/// Calls io.tether.Gateway1 the way the CLI does, for tests.
struct GatewayClient {
    let connection: DBusConnection

    func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(30)) async throws -> [DBusValue] {
        try await connection.call(
            destination: "io.tether.Gateway", path: "/io/tether/Gateway", interface: "io.tether.Gateway1",
            member: member, arguments: arguments, timeout: timeout)
    }

    func record(_ member: String, _ arguments: [DBusValue] = []) async throws -> [String: DBusValue] {
        let reply = try await call(member, arguments)
        guard let record = reply.first?.variantDictionaryValue else { throw DaemonTestError("\(member) did not return a{sv}: \(reply)") }
        return record
    }

    func records(_ member: String, _ arguments: [DBusValue] = []) async throws -> [[String: DBusValue]] {
        let reply = try await call(member, arguments)
        guard let elements = reply.first?.arrayElements else { throw DaemonTestError("\(member) did not return aa{sv}: \(reply)") }
        return try elements.map { element in
            guard let record = element.variantDictionaryValue else { throw DaemonTestError("\(member): element is not a{sv}") }
            return record
        }
    }

    func status() async throws -> [String: DBusValue] { try await record("GetStatus") }

    /// Waits until the daemon owns io.tether.Gateway and answers GetStatus. 120 s: a bound for a broken start, not a
    /// slow one; in a full parallel run one GetStatus once went 30 s without an answer and 60 s was not enough.
    func waitForDaemon(_ daemon: DaemonProcess) async throws {
        try await waitUntil("tetherd on the bus; log:\n\(daemon.logText)", seconds: 120, every: .milliseconds(100), retryingErrors: true) {
            _ = try await status()
            return true
        }
    }

    /// Devices by serial from ListDevices.
    func devices() async throws -> [String: [String: DBusValue]] {
        var bySerial: [String: [String: DBusValue]] = [:]
        for device in try await records("ListDevices") {
            if let serial = device["serial"]?.stringValue { bySerial[serial] = device }
        }
        return bySerial
    }
}
