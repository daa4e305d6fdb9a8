import DBus
import Synchronization

/// A Tether object with properties: `com.example.Thing` (read-write Name, read-only Serial and Cached).
///
/// Setting Name announces the change the way BlueZ does: PropertiesChanged with the new value, and Cached
/// listed as invalidated (clients must re-read it).
final class ThingObject: Sendable {
    static let path: DBusObjectPath = "/org/example/thing"
    static let interfaceName = "com.example.Thing"

    private let name = Mutex("initial")
    let server: DBusObjectServer

    init(server: DBusObjectServer) {
        self.server = server
    }

    var currentName: String { name.withLock { $0 } }

    var interface: DBusInterface {
        DBusInterface(
            name: Self.interfaceName,
            methods: [
                DBusMethod("Rename", inputs: [DBusArgument("name", "s")], outputs: [DBusArgument("previous", "s")]) {
                    [self] call in
                    guard let newName = call.arguments[0].stringValue else { return [] }
                    let previous = name.withLock { current in
                        defer { current = newName }
                        return current
                    }
                    return [.string(previous)]
                }
            ],
            properties: [
                DBusProperty("Name", signature: "s", getter: { [self] in .string(currentName) }) { [self] value in
                    guard let newName = value.stringValue, !newName.isEmpty else {
                        throw DBusError(.invalidArgs, "Name must be a non-empty string")
                    }
                    name.withLock { $0 = newName }
                    try server.emitPropertiesChanged(
                        path: Self.path, interface: Self.interfaceName, changed: ["Name": .string(newName)],
                        invalidated: ["Cached"])
                },
                DBusProperty("Serial", signature: "u", getter: { .uint32(42) }),
                DBusProperty("Cached", signature: "as", getter: { .strings(["x"]) }),
            ],
            signals: [DBusSignalDeclaration("Renamed", arguments: [DBusArgument("name", "s")])]
        )
    }

    /// GetAll's expected answer for the initial state, in declaration order.
    static let initialProperties: DBusValue = .dictionary(
        keySignature: "s", valueSignature: "v",
        [
            DBusDictionaryEntry(key: .string("Name"), value: .variant(.string("initial"))),
            DBusDictionaryEntry(key: .string("Serial"), value: .variant(.uint32(42))),
            DBusDictionaryEntry(key: .string("Cached"), value: .variant(.strings(["x"]))),
        ])
}
