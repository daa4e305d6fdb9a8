import DBus
import Foundation
import Testing

extension DBusIntegrationTests {
    /// org.freedesktop.DBus.Properties on exported objects.
    @Suite struct Properties {
        @Test func pythonReadsWritesAndObservesProperties() async throws {
            try await withPrivateBus { bus, connection in
                let thing = ThingObject(server: connection.objectServer)
                try await connection.objectServer.export([thing.interface], at: ThingObject.path)
                let output = try await PythonPeer.run(PeerScripts.propertiesClient, [bus.address, connection.uniqueName])
                #expect(output.status == 0, "\(output.standardError)")
                let json = try #require(
                    try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? [String: Any])

                #expect(json["get"] as? String == pythonDescription(of: .variant(.string("initial"))))
                #expect(json["getall"] as? String == pythonDescription(of: ThingObject.initialProperties))
                #expect(json["readonly"] as? String == "org.freedesktop.DBus.Error.PropertyReadOnly")
                #expect(json["wrongtype"] as? String == "org.freedesktop.DBus.Error.InvalidArgs")
                #expect(json["unknownproperty"] as? String == "org.freedesktop.DBus.Error.UnknownProperty")
                #expect(json["unknowninterface"] as? String == "org.freedesktop.DBus.Error.UnknownInterface")
                #expect(json["set"] as? String == "no error")
                #expect(json["after"] as? String == pythonDescription(of: .variant(.string("renamed"))))
                #expect(thing.currentName == "renamed")

                let changes = json["changed"] as? [[String: Any]] ?? []
                #expect(changes.count == 1, "exactly one PropertiesChanged: \(output.standardOutput)")
                let change = changes.first ?? [:]
                #expect(change["path"] as? String == ThingObject.path.rawValue)
                #expect(change["interface"] as? String == ThingObject.interfaceName)
                #expect(change["changed"] as? String == pythonDescription(of: .variantDictionary(["Name": .string("renamed")])))
                #expect(change["invalidated"] as? [String] == ["Cached"])
            }
        }

        @Test func tetherClientUsesPropertiesOfAnotherConnection() async throws {
            try await withPrivateBus { bus, server in
                let thing = ThingObject(server: server.objectServer)
                try await server.objectServer.export([thing.interface], at: ThingObject.path)
                let client = try await DBusConnection.connect(to: .address(bus.address))
                func properties(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
                    try await client.call(
                        destination: server.uniqueName, path: ThingObject.path,
                        interface: "org.freedesktop.DBus.Properties", member: member, arguments: arguments)
                }
                let changes = try await client.signals(
                    matching: DBusMatchRule(
                        sender: server.uniqueName, interface: "org.freedesktop.DBus.Properties",
                        member: "PropertiesChanged", path: ThingObject.path))

                #expect(try await properties("Get", [.string(ThingObject.interfaceName), .string("Serial")]) == [.variant(.uint32(42))])
                #expect(try await properties("GetAll", [.string(ThingObject.interfaceName)]) == [ThingObject.initialProperties])
                // The setter refuses an empty name with its own error.
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    _ = try await properties("Set", [.string(ThingObject.interfaceName), .string("Name"), .variant(.string(""))])
                }
                _ = try await properties("Set", [.string(ThingObject.interfaceName), .string("Name"), .variant(.string("two"))])
                // A change announced by reading the getters.
                _ = try await client.call(
                    destination: server.uniqueName, path: ThingObject.path, interface: ThingObject.interfaceName,
                    member: "Rename", arguments: [.string("three")])
                try await server.objectServer.emitPropertiesChanged(
                    path: ThingObject.path, interface: ThingObject.interfaceName, reading: ["Name", "Serial"])

                let received = try await collect(2, from: changes)
                #expect(received.map(\.arguments) == [
                    [.string(ThingObject.interfaceName), .variantDictionary(["Name": .string("two")]), .strings(["Cached"])],
                    [.string(ThingObject.interfaceName), .variantDictionary(["Name": .string("three"), "Serial": .uint32(42)]), .strings([])],
                ])
                await client.close()
            }
        }
    }
}
