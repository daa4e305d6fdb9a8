import DBus
import Foundation
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// The private dbus-daemon helper that tests, the demo and the BlueZ simulator share.
    @Suite struct PrivateBus {
        @Test func systemBusClientsFindItThroughTheEnvironment() async throws {
            let bus = try await DBusPrivateBus.start()
            defer { bus.stop() }
            #expect(bus.isRunning)
            #expect(bus.address.hasPrefix("unix:path=\(bus.socketPath),guid="))
            #expect(FileManager.default.fileExists(atPath: bus.socketPath))

            // A client that only knows "the system bus" (as bleak does) lands on the private bus.
            let resolved = try DBusBusAddress.system.resolved(environment: ChildProcess.environment(bus.systemBusEnvironment))
            #expect(resolved == bus.address)
            let connection = try await DBusConnection.connect(to: .address(resolved))
            _ = try await connection.requestName("com.example.OnSystemBus")
            let output = try await ChildProcess.run(
                PythonPeer.interpreter,
                ["-c", "import dbus; print('com.example.OnSystemBus' in dbus.SystemBus().list_names())"],
                environment: ChildProcess.environment(bus.systemBusEnvironment))
            #expect(output.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "True", "\(output.standardError)")
            await connection.close()
        }

        @Test func stopEndsTheDaemonAndRemovesItsDirectory() async throws {
            let bus = try await DBusPrivateBus.start()
            let connection = try await DBusConnection.connect(to: .address(bus.address))
            bus.stop()
            bus.stop()
            #expect(!bus.isRunning)
            #expect(!FileManager.default.fileExists(atPath: bus.directory))
            try await within(.seconds(30), "the connection to notice") { await connection.waitUntilDisconnected() }
            await #expect(throws: DBusError.self) {
                _ = try await DBusConnection.connect(to: .address(bus.address))
            }
        }

        @Test func addressesResolveFromTheEnvironment() throws {
            #expect(try DBusBusAddress.system.resolved(environment: [:]) == "unix:path=/var/run/dbus/system_bus_socket")
            #expect(try DBusBusAddress.session.resolved(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/s"]) == "unix:path=/s")
            #expect(throws: DBusError(.badAddress, "")) { try DBusBusAddress.session.resolved(environment: [:]) }
            #expect(try DBusBusAddress.address("tcp:host=x").resolved(environment: [:]) == "tcp:host=x")
        }
    }
}
