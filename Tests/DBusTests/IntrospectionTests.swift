import DBus
import Foundation
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// Introspection XML as parsed by other implementations: Python's ElementTree and GLib (gdbus introspect).
    @Suite struct Introspection {
        typealias Summary = [String: [String: Any]]

        @Test func introspectionDescribesInterfacesAndChildren() async throws {
            try await withPrivateBus { bus, connection in
                let server = connection.objectServer
                try server.addObjectManager(at: .root)
                try await server.export([ThingObject(server: server).interface], at: ThingObject.path)
                try await server.export([EchoObject().interface], at: EchoObject.path)

                let output = try await PythonPeer.run(
                    PeerScripts.introspectionClient,
                    [bus.address, connection.uniqueName, "/", "/org", "/org/example", ThingObject.path.rawValue])
                #expect(output.status == 0, "\(output.standardError)")
                let json = try #require(
                    try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? Summary)

                let root = try #require(json["/"])
                #expect(root["children"] as? [String] == ["org", "test"])
                let rootInterfaces = (root["interfaces"] as? [String: Any])?.keys.sorted()
                #expect(rootInterfaces == [
                    "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.ObjectManager",
                    "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Properties",
                ])

                let intermediate = try #require(json["/org"])
                #expect(intermediate["children"] as? [String] == ["example"])
                #expect((intermediate["interfaces"] as? [String: Any])?.keys.sorted() == ["org.freedesktop.DBus.Introspectable"])

                let thing = try #require(json[ThingObject.path.rawValue])
                #expect((thing["children"] as? [String])?.isEmpty == true)
                let interfaces = try #require(thing["interfaces"] as? [String: [String: Any]])
                #expect(interfaces.keys.sorted() == [
                    "com.example.Thing", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Peer",
                    "org.freedesktop.DBus.Properties",
                ])
                let declared = try #require(interfaces["com.example.Thing"])
                #expect(declared["methods"] as? [String: [[String]]] == [
                    "Rename": [["name", "s", "in"], ["previous", "s", "out"]]
                ])
                #expect(declared["signals"] as? [String: [[String]]] == ["Renamed": [["name", "s"]]])
                #expect(declared["properties"] as? [String: [String]] == [
                    "Name": ["s", "readwrite"], "Serial": ["u", "read"], "Cached": ["as", "read"],
                ])
                let properties = try #require(interfaces["org.freedesktop.DBus.Properties"])
                #expect((properties["methods"] as? [String: Any])?.keys.sorted() == ["Get", "GetAll", "Set"])
            }
        }

        @Test func gdbusParsesTheXMLAndReadsProperties() async throws {
            try await withPrivateBus { bus, connection in
                let server = connection.objectServer
                try await server.export([ThingObject(server: server).interface], at: ThingObject.path)
                let output = try await ChildProcess.run(
                    "/usr/bin/gdbus",
                    ["introspect", "--address", bus.address, "--dest", connection.uniqueName,
                     "--object-path", ThingObject.path.rawValue])
                #expect(output.status == 0, "\(output.standardError)")
                let text = output.standardOutput
                #expect(text.contains("interface com.example.Thing {"))
                #expect(text.contains("Rename(in  s name,"))
                #expect(text.contains("out s previous);"))
                #expect(text.contains("Renamed(s name);"))
                #expect(text.contains("readwrite s Name = 'initial';"))
                #expect(text.contains("readonly u Serial = 42;"))
                #expect(text.contains("readonly as Cached = ['x'];"))
            }
        }

        @Test func unknownPathsAreUnknownObjects() async throws {
            try await withPrivateBus { bus, connection in
                try await connection.objectServer.export([EchoObject().interface], at: "/a/b")
                let client = try await DBusConnection.connect(to: .address(bus.address))
                let introspectable = "org.freedesktop.DBus.Introspectable"
                let above = try await client.call(
                    destination: connection.uniqueName, path: "/a", interface: introspectable, member: "Introspect")
                #expect(above.first?.stringValue?.contains(#"<node name="b"/>"#) == true)
                await #expect(throws: DBusError(.unknownObject, "")) {
                    _ = try await client.call(
                        destination: connection.uniqueName, path: "/c", interface: introspectable, member: "Introspect")
                }
                await #expect(throws: DBusError(.unknownObject, "")) {
                    _ = try await client.call(
                        destination: connection.uniqueName, path: "/a",
                        interface: "org.freedesktop.DBus.Properties", member: "GetAll", arguments: [.string("x.y")])
                }
                await client.close()
            }
        }
    }
}
