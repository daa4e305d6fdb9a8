import DBus

/// Every error a BlueZ operation reports, with all `org.bluez.Error.*` names mapped here and nowhere else.
///
/// Equality is by case and payload; `.dbus` compares by D-Bus error code (the message is for people).
public enum BlueZError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `org.bluez.Error.InProgress`: the same operation is already running (for Connect: a half-open attempt).
    case inProgress
    /// `org.bluez.Error.Failed` with BlueZ's reason, e.g. "le-connection-abort-by-local" or
    /// "Operation failed with ATT error: 0x0d".
    case failed(String)
    /// `org.bluez.Error.NotPermitted` with BlueZ's message ("Read not permitted", "Notify acquired", ...).
    case notPermitted(String)
    case notAuthorized
    case notSupported
    case notReady
    case notConnected
    case notAvailable
    case invalidArguments
    case invalidLength
    case alreadyConnected
    case alreadyExists
    case doesNotExist
    case authenticationFailed
    case authenticationCanceled
    case authenticationRejected
    case authenticationTimeout
    case connectionAttemptFailed
    /// `org.bluez.Error.Rejected` / `.Canceled`: what an agent answers (and what BlueZ may relay).
    case rejected
    case canceled
    /// A bounded wait or call ran out of time here.
    case timeout
    /// Any other D-Bus error (bus failures, unknown objects, other services' errors).
    case dbus(DBusError)

    static let prefix = "org.bluez.Error."

    /// Maps a D-Bus error reply to its BlueZ meaning.
    public init(_ error: DBusError) {
        guard error.name.hasPrefix(Self.prefix) else {
            self = error.code == .noReply ? .timeout : .dbus(error)
            return
        }
        switch error.name.dropFirst(Self.prefix.count) {
        case "InProgress": self = .inProgress
        case "Failed": self = .failed(error.message)
        case "NotPermitted": self = .notPermitted(error.message)
        case "NotAuthorized": self = .notAuthorized
        case "NotSupported": self = .notSupported
        case "NotReady": self = .notReady
        case "NotConnected": self = .notConnected
        case "NotAvailable": self = .notAvailable
        case "InvalidArguments": self = .invalidArguments
        case "InvalidLength", "InvalidValueLength": self = .invalidLength
        case "AlreadyConnected": self = .alreadyConnected
        case "AlreadyExists": self = .alreadyExists
        case "DoesNotExist": self = .doesNotExist
        case "AuthenticationFailed": self = .authenticationFailed
        case "AuthenticationCanceled": self = .authenticationCanceled
        case "AuthenticationRejected": self = .authenticationRejected
        case "AuthenticationTimeout": self = .authenticationTimeout
        case "ConnectionAttemptFailed": self = .connectionAttemptFailed
        case "Rejected": self = .rejected
        case "Canceled": self = .canceled
        default: self = .dbus(error)
        }
    }

    /// Maps any error thrown by a D-Bus call; other errors (cancellation) pass through unchanged.
    static func mapping(_ error: any Error) -> any Error {
        if let error = error as? DBusError { return BlueZError(error) }
        return error
    }

    /// The error reply an exported BlueZ-facing object (the agent) sends.
    static func reply(_ suffix: String, _ message: String) -> DBusError {
        DBusError(name: prefix + suffix, message: message)
    }

    /// The ATT error code the remote device answered with, when BlueZ reports one in its generic form
    /// ("Operation failed with ATT error: 0xfe", src/gatt-client.c create_gatt_dbus_error; the codes it maps to a
    /// named error, such as 0x03 Write Not Permitted, are not recovered here).
    public var attErrorCode: UInt8? {
        guard case .failed(let message) = self else { return nil }
        let marker = "ATT error: 0x"
        var rest = Substring(message)
        while !rest.isEmpty, !rest.hasPrefix(marker) { rest = rest.dropFirst() }
        guard !rest.isEmpty else { return nil }
        return UInt8(rest.dropFirst(marker.count).prefix(2), radix: 16)
    }

    public var description: String {
        switch self {
        case .failed(let reason): "BlueZ operation failed: \(reason)"
        case .notPermitted(let message): "BlueZ: not permitted (\(message))"
        case .timeout: "BlueZ operation timed out"
        case .dbus(let error): "D-Bus error: \(error)"
        default: "BlueZ error: \(self.caseName)"
        }
    }

    private var caseName: String {
        switch self {
        case .inProgress: "in progress"
        case .notAuthorized: "not authorized"
        case .notSupported: "not supported"
        case .notReady: "not ready"
        case .notConnected: "not connected"
        case .notAvailable: "not available"
        case .invalidArguments: "invalid arguments"
        case .invalidLength: "invalid length"
        case .alreadyConnected: "already connected"
        case .alreadyExists: "already exists"
        case .doesNotExist: "does not exist"
        case .authenticationFailed: "authentication failed"
        case .authenticationCanceled: "authentication canceled"
        case .authenticationRejected: "authentication rejected"
        case .authenticationTimeout: "authentication timeout"
        case .connectionAttemptFailed: "connection attempt failed"
        case .rejected: "rejected"
        case .canceled: "canceled"
        case .failed, .notPermitted, .timeout, .dbus: ""
        }
    }
}
