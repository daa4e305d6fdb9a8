internal import CDBus

/// Checks on the names carried in message headers, done with libdbus's own validators before a name reaches
/// a libdbus constructor or setter (which would abort the process on an invalid name).
enum WireNames {
    static func requireBusName(_ name: String) throws {
        try require(name, kind: "bus name", dbus_validate_bus_name)
    }

    static func requireInterface(_ name: String) throws {
        try require(name, kind: "interface name", dbus_validate_interface)
    }

    static func requireMember(_ name: String) throws {
        try require(name, kind: "member name", dbus_validate_member)
    }

    static func requireErrorName(_ name: String) throws {
        try require(name, kind: "error name", dbus_validate_error_name)
    }

    static func requirePath(_ path: DBusObjectPath) throws {
        guard path.isValid else {
            throw DBusError(.invalidArgs, "Invalid object path '\(path.rawValue)'")
        }
    }

    static func isValidBusName(_ name: String) -> Bool {
        (try? requireBusName(name)) != nil
    }

    /// Unique connection names (`:1.42`) as opposed to well-known names (`org.bluez`).
    static func isUniqueName(_ name: String) -> Bool {
        name.hasPrefix(":")
    }

    private static func require(
        _ name: String,
        kind: String,
        _ validate: (UnsafePointer<CChar>?, UnsafeMutablePointer<CDBus.DBusError>?) -> dbus_bool_t
    ) throws {
        let valid = !name.utf8.contains(0) && name.withCString { validate($0, nil) != 0 }
        guard valid else {
            throw DBusError(.invalidArgs, "Invalid \(kind) '\(name)'")
        }
    }
}
