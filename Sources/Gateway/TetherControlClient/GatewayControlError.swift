import DBus
import ControlContract

/// Why a control-API call failed, in the terms a technician acts on. Every D-Bus error a client can meet is
/// mapped here and nowhere else (control-api.md, Errors), so the CLI's exit codes and advice stay in one place.
public enum GatewayControlError: Error, Sendable, Equatable {
    /// The bus itself cannot be reached (no socket, refused, authentication failed).
    case busUnreachable(address: String, reason: String)
    /// The bus is there but nobody owns io.tether.Gateway.
    case daemonNotRunning
    /// The daemon did not answer in time, or left the bus during the call.
    case daemonNotAnswering(method: String)
    /// The bus policy refused the call (deploy/dbus/io.tether.Gateway.conf).
    case accessDenied(method: String)
    /// The daemon does not implement this method or interface: a version mismatch.
    case unsupported(method: String)
    /// The daemon answered with one of the contract's errors; the message is the daemon's and is shown as is.
    case daemon(GatewayErrorName, message: String)
    /// A D-Bus error the contract does not name.
    case other(name: String, message: String)
    /// The reply did not have the contract's shape.
    case unexpectedReply(method: String, signature: String)

    /// Maps an error thrown by `DBusConnection.call` for `method`.
    public init(_ error: DBusError, method: String) {
        switch error.code {
        case .serviceUnknown, .nameHasNoOwner:
            self = .daemonNotRunning
        case .noReply, .timeout, .timedOut, .disconnected:
            self = .daemonNotAnswering(method: method)
        case .accessDenied, .authFailed:
            self = .accessDenied(method: method)
        case .unknownMethod, .unknownInterface, .unknownObject:
            self = .unsupported(method: method)
        case .other(let name) where name.hasPrefix(GatewayContract.errorPrefix):
            let short = String(name.dropFirst(GatewayContract.errorPrefix.count))
            self = .daemon(GatewayErrorName(rawValue: short) ?? .unknown(short), message: error.message)
        default:
            self = .other(name: error.name, message: error.message)
        }
    }
}
