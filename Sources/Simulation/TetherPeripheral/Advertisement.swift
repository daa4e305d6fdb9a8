import LinkProtocol
import DBus

/// An `org.bluez.LEAdvertisement1` object (doc/advertising-api.txt): a connectable ("peripheral") advertisement
/// carrying Tether's service UUID and the device's name.
struct Advertisement: Sendable {
    let path: DBusObjectPath
    let localName: String

    func export(on connection: DBusConnection, released: @escaping @Sendable () async -> Void) async throws {
        let localName = localName
        try await connection.objectServer.export([
            DBusInterface(
                name: BlueZName.advertisement,
                methods: [
                    // BlueZ calls Release when it drops the advertisement on its own (adapter off, daemon exit).
                    DBusMethod("Release") { _ in
                        await released()
                        return []
                    }
                ],
                properties: [
                    DBusProperty("Type", signature: "s") { .string("peripheral") },
                    DBusProperty("ServiceUUIDs", signature: "as") { .strings([TetherGATT.service]) },
                    DBusProperty("LocalName", signature: "s") { .string(localName) },
                ])
        ], at: path)
    }
}
