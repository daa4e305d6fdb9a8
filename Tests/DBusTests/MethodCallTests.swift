import DBus
import Foundation
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// Calls in both directions: standard error names for everything that does not resolve, errors by name,
    /// timeouts and cancellation.
    @Suite struct MethodCalls {
        @Test func externalCallersGetStandardErrorNames() async throws {
            try await withPrivateBus { bus, connection in
                try await connection.objectServer.export([EchoObject().interface], at: EchoObject.path)
                let output = try await PythonPeer.run(PeerScripts.errorsClient, [bus.address, connection.uniqueName])
                #expect(output.status == 0, "\(output.standardError)")
                let json = try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? [String: String]
                #expect(json?["unknownmethod"] == "org.freedesktop.DBus.Error.UnknownMethod")
                #expect(json?["unknowninterface"] == "org.freedesktop.DBus.Error.UnknownInterface")
                #expect(json?["unknownobject"] == "org.freedesktop.DBus.Error.UnknownObject")
                #expect(json?["invalidargs"] == "org.freedesktop.DBus.Error.InvalidArgs")
                #expect(json?["thrown"] == "org.bluez.Error.InProgress")
                #expect(json?["thrownmessage"] == "Busy right now")
            }
        }

        @Test func errorRepliesAreMappedByName() async throws {
            try await withPrivateBus { bus, connection in
                let service = try await startPythonService(bus: bus, connection: connection)
                defer { service.kill() }
                await #expect(throws: DBusError(.other("com.example.Error.Custom"), "")) {
                    _ = try await connection.call(
                        destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer", member: "Fail")
                }
                do {
                    _ = try await connection.call(
                        destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer", member: "Fail")
                } catch let error as DBusError {
                    #expect(error.name == "com.example.Error.Custom")
                    #expect(error.message.contains("it went wrong on purpose"))
                }
                await #expect(throws: DBusError(.unknownMethod, "")) {
                    _ = try await connection.call(
                        destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer", member: "Nope")
                }
                await #expect(throws: DBusError(.serviceUnknown, "")) {
                    _ = try await connection.call(
                        destination: "com.example.Absent", path: "/", interface: nil, member: "Anything")
                }
                // A Tether object calling a Tether object: errors thrown by the handler arrive by name.
                let second = try await DBusConnection.connect(to: .address(bus.address))
                try await second.objectServer.export([EchoObject().interface], at: EchoObject.path)
                await #expect(throws: DBusError(.other("org.bluez.Error.InProgress"), "")) {
                    _ = try await connection.call(
                        destination: second.uniqueName, path: EchoObject.path, interface: EchoObject.interfaceName,
                        member: "Refuse")
                }
                await #expect(throws: DBusError(.unknownObject, "")) {
                    _ = try await connection.call(
                        destination: second.uniqueName, path: "/absent", interface: EchoObject.interfaceName,
                        member: "Refuse")
                }
                await second.close()
            }
        }

        @Test func callWithoutReplyTimesOut() async throws {
            try await withPrivateBus { bus, connection in
                let service = try await startPythonService(bus: bus, connection: connection)
                defer { service.kill() }
                let clock = ContinuousClock()
                let started = clock.now
                await #expect(throws: DBusError(.noReply, "")) {
                    _ = try await connection.call(
                        destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer",
                        member: "NeverReply", timeout: .milliseconds(300))
                }
                let elapsed = clock.now - started
                #expect(elapsed >= .milliseconds(300))
                #expect(elapsed < .seconds(5))
                // The connection is still usable after a timeout.
                let echoed = try await connection.call(
                    destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer", member: "Echo",
                    arguments: [.variant(.string("still here"))])
                #expect(echoed == [.variant(.string("still here"))])
            }
        }

        @Test func cancellingTheCallingTaskAbandonsTheCall() async throws {
            try await withPrivateBus { bus, connection in
                let service = try await startPythonService(bus: bus, connection: connection)
                defer { service.kill() }
                let call = Task {
                    try await connection.call(
                        destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer",
                        member: "NeverReply", timeout: .seconds(60))
                }
                call.cancel()
                let outcome = try await within(.seconds(30), "the cancelled call to end") { await call.result }
                #expect(throws: CancellationError.self) { try outcome.get() }
            }
        }

        @Test func invalidArgumentsAreRefusedLocally() async throws {
            try await withPrivateBus { _, connection in
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    _ = try await connection.call(
                        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                        interface: "org.freedesktop.DBus", member: "GetNameOwner",
                        arguments: [.array(elementSignature: "s", [.uint32(1)])])
                }
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    _ = try await connection.call(
                        destination: "not a name", path: "/", interface: nil, member: "M")
                }
                // The connection is unaffected.
                let owner = try await connection.nameOwner(of: "org.freedesktop.DBus")
                #expect(owner == "org.freedesktop.DBus")
            }
        }
    }
}
