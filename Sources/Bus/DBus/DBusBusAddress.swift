import Foundation

/// Which bus to connect to.
public enum DBusBusAddress: Hashable, Sendable {
    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS`, else the standard socket. This is where BlueZ lives.
    case system
    /// The login session's bus: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`.
    case session
    /// An explicit D-Bus address such as `unix:path=/tmp/bus,guid=...` (e.g. a `DBusPrivateBus`).
    case address(String)

    /// Spec: the well-known system bus socket when DBUS_SYSTEM_BUS_ADDRESS is unset.
    static let defaultSystemBusAddress = "unix:path=/var/run/dbus/system_bus_socket"

    /// The address to open, resolved from the environment where needed.
    public func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        switch self {
        case .system:
            return nonEmpty(environment["DBUS_SYSTEM_BUS_ADDRESS"]) ?? Self.defaultSystemBusAddress
        case .session:
            if let address = nonEmpty(environment["DBUS_SESSION_BUS_ADDRESS"]) {
                return address
            }
            if let runtimeDirectory = nonEmpty(environment["XDG_RUNTIME_DIR"]) {
                let socket = runtimeDirectory + "/bus"
                if FileManager.default.fileExists(atPath: socket) {
                    return "unix:path=" + socket
                }
            }
            throw DBusError(.badAddress, "No session bus: DBUS_SESSION_BUS_ADDRESS is not set")
        case .address(let address):
            guard let address = nonEmpty(address) else {
                throw DBusError(.badAddress, "Empty D-Bus address")
            }
            return address
        }
    }

    private func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }
}
