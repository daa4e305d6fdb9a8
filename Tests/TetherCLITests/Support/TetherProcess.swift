import Foundation
import TetherTestSupport

/// Runs the built `tether` executable as a user would, and collects its exit status and output.
enum TetherProcess {
    typealias Result = ChildProcess.Result

    /// Runs `tether arguments…` (or `executable`) against `bus`, with `input` on stdin.
    static func run(
        _ arguments: [String], bus: String? = nil, input: String? = nil, environment: [String: String] = [:],
        timeout: Duration = .seconds(60), executable: String? = nil
    ) async throws -> Result {
        let executable = try executable ?? BuiltProducts.require("tether", override: "TETHER_CLI_BINARY")
        var childEnvironment = ChildProcess.environment(environment)
        childEnvironment["TETHER_BUS_ADDRESS"] = bus
        // Point the default at nothing so a test never reaches a real system bus by accident.
        childEnvironment["DBUS_SYSTEM_BUS_ADDRESS"] = environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/nonexistent/tether-test-bus"
        return try await ChildProcess.run(
            executable, arguments, environment: childEnvironment, input: input.map { .text($0) } ?? .null, timeout: timeout)
    }
}
