import DBus
import Foundation
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// org.freedesktop.DBus.ObjectManager: GetManagedObjects and the InterfacesAdded/Removed announcements, in
    /// BlueZ's shape (Introspectable and Properties listed with empty dictionaries beside real interfaces).
    @Suite struct ObjectManager {
        static let standardEntries = [
            DBusDictionaryEntry(key: .string("org.freedesktop.DBus.Introspectable"), value: .variantDictionary([:])),
            DBusDictionaryEntry(key: .string("org.freedesktop.DBus.Properties"), value: .variantDictionary([:])),
        ]

        static func adapter() -> DBusInterface {
            DBusInterface(
                name: "com.example.Adapter",
                properties: [DBusProperty("Address", signature: "s", getter: { .string("00:11:22:33:44:55") })])
        }

        static func device() -> DBusInterface {
            DBusInterface(
                name: "com.example.Device",
                properties: [
                    DBusProperty("Name", signature: "s", getter: { .string("one") }),
                    DBusProperty("RSSI", signature: "n", getter: { .int16(-60) }),
                ])
        }

        static func battery() -> DBusInterface {
            DBusInterface(
                name: "com.example.Battery",
                properties: [DBusProperty("Percentage", signature: "y", getter: { .byte(80) })])
        }

        static func interfaces(_ entries: [(String, DBusValue)]) -> DBusValue {
            .dictionary(
                keySignature: "s", valueSignature: "a{sv}",
                entries.map { DBusDictionaryEntry(key: .string($0.0), value: $0.1) } + standardEntries)
        }

        @Test func pythonSeesManagedObjectsAndAnnouncements() async throws {
            try await withPrivateBus { bus, connection in
                let server = connection.objectServer
                try server.addObjectManager(at: .root)
                try await server.export([Self.adapter()], at: "/org/example/hci0")

                var started: ChildProcess?
                _ = try await awaitNameOwner("com.example.Monitor", on: connection) {
                    started = try PythonPeer.start(
                        PeerScripts.objectManagerMonitor, [bus.address, connection.uniqueName, "4"])
                }
                let monitor = try #require(started)
                defer { monitor.kill() }

                let devicePath: DBusObjectPath = "/org/example/hci0/dev_1"
                try await server.export([Self.device()], at: devicePath)
                try await server.export([Self.battery()], at: devicePath)

                let managed = try await PythonPeer.run(
                    PeerScripts.managedObjectsClient, [bus.address, connection.uniqueName])
                #expect(managed.status == 0, "\(managed.standardError)")
                let adapterProperties = DBusValue.variantDictionary(["Address": .string("00:11:22:33:44:55")])
                let deviceProperties = DBusValue.dictionary(
                    keySignature: "s", valueSignature: "v",
                    [DBusDictionaryEntry(key: .string("Name"), value: .variant(.string("one"))),
                     DBusDictionaryEntry(key: .string("RSSI"), value: .variant(.int16(-60)))])
                let expectedManaged = DBusValue.dictionary(
                    keySignature: "o", valueSignature: "a{sa{sv}}",
                    [
                        DBusDictionaryEntry(
                            key: .objectPath("/org/example/hci0"),
                            value: Self.interfaces([("com.example.Adapter", adapterProperties)])),
                        DBusDictionaryEntry(
                            key: .objectPath(devicePath),
                            value: Self.interfaces([
                                ("com.example.Device", deviceProperties),
                                ("com.example.Battery", .variantDictionary(["Percentage": .byte(80)])),
                            ])),
                    ])
                #expect(managed.lines == [pythonDescription(of: expectedManaged)])

                #expect(server.removeInterface(named: "com.example.Battery", at: devicePath))
                #expect(server.unexport(devicePath))
                #expect(!server.unexport(devicePath), "already gone")

                let output = try await monitor.finish(timeout: .seconds(20))
                let batteryOnly = DBusValue.dictionary(
                    keySignature: "s", valueSignature: "a{sv}",
                    [DBusDictionaryEntry(
                        key: .string("com.example.Battery"), value: .variantDictionary(["Percentage": .byte(80)]))])
                #expect(output.lines == [
                    "added \(devicePath) " + pythonDescription(of: Self.interfaces([("com.example.Device", deviceProperties)])),
                    "added \(devicePath) " + pythonDescription(of: batteryOnly),
                    "removed \(devicePath) " + pythonDescription(of: .strings(["com.example.Battery"])),
                    "removed \(devicePath) " + pythonDescription(of: .strings([
                        "com.example.Device", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties",
                    ])),
                ], "\(output.standardError)")
            }
        }

        @Test func objectsOutsideAManagerAreNotAnnounced() async throws {
            try await withPrivateBus { bus, connection in
                let server = connection.objectServer
                try server.addObjectManager(at: "/managed")
                let watcher = try await DBusConnection.connect(to: .address(bus.address))
                let announcements = try await watcher.signals(
                    matching: DBusMatchRule(sender: connection.uniqueName, interface: "org.freedesktop.DBus.ObjectManager"))
                try await server.export([Self.battery()], at: "/unmanaged/thing")
                try await server.export([Self.battery()], at: "/managed/thing")
                let received = try await collect(1, from: announcements)
                #expect(received.map(\.path) == ["/managed"])
                #expect(received.first?.arguments.first == .objectPath("/managed/thing"))

                let managed = try await watcher.call(
                    destination: connection.uniqueName, path: "/managed",
                    interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
                #expect(managed.first?.dictionaryEntries?.map(\.key) == [.objectPath("/managed/thing")])
                await #expect(throws: DBusError(.unknownInterface, "")) {
                    _ = try await watcher.call(
                        destination: connection.uniqueName, path: "/unmanaged/thing",
                        interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
                }
                await watcher.close()
            }
        }

        @Test func exportingTwiceIsRefused() async throws {
            try await withPrivateBus { _, connection in
                try await connection.objectServer.export([Self.battery()], at: "/a")
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    try await connection.objectServer.export([Self.battery()], at: "/a")
                }
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    try await connection.objectServer.export([Self.battery()], at: "/bad/")
                }
                await #expect(throws: DBusError(.invalidArgs, "")) {
                    try await connection.objectServer.export(
                        [DBusInterface(name: "org.freedesktop.DBus.Properties")], at: "/b")
                }
                #expect(connection.objectServer.exportedPaths == ["/a"])
            }
        }
    }
}
