/// An error as D-Bus names it: a dotted error name and a human-readable message.
///
/// Replies from peers, failures of the bus and failures detected locally (a lost connection, a call that timed
/// out, a value that cannot be marshalled) all surface as `DBusError`, so callers handle one type. The mapping
/// between well-known error names and `Code` lives in this file only.
///
/// Two errors are equal when their codes are equal; the message is for people, not for matching.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The well-known error names, plus `.other` for anything else (for example `org.bluez.Error.InProgress`).
    public enum Code: Hashable, Sendable {
        case failed
        case noMemory
        case serviceUnknown
        case nameHasNoOwner
        case noReply
        case ioError
        case badAddress
        case notSupported
        case limitsExceeded
        case accessDenied
        case authFailed
        case noServer
        case timeout
        case timedOut
        case disconnected
        case invalidArgs
        case invalidSignature
        case unknownMethod
        case unknownObject
        case unknownInterface
        case unknownProperty
        case propertyReadOnly
        case matchRuleNotFound
        case matchRuleInvalid
        case inconsistentMessage
        case fileNotFound
        case other(String)

        /// The code for an error name received on the wire.
        public init(name: String) {
            self = Self.codesByName[name] ?? .other(name)
        }

        /// The error name sent on the wire.
        public var name: String {
            switch self {
            case .failed: "org.freedesktop.DBus.Error.Failed"
            case .noMemory: "org.freedesktop.DBus.Error.NoMemory"
            case .serviceUnknown: "org.freedesktop.DBus.Error.ServiceUnknown"
            case .nameHasNoOwner: "org.freedesktop.DBus.Error.NameHasNoOwner"
            case .noReply: "org.freedesktop.DBus.Error.NoReply"
            case .ioError: "org.freedesktop.DBus.Error.IOError"
            case .badAddress: "org.freedesktop.DBus.Error.BadAddress"
            case .notSupported: "org.freedesktop.DBus.Error.NotSupported"
            case .limitsExceeded: "org.freedesktop.DBus.Error.LimitsExceeded"
            case .accessDenied: "org.freedesktop.DBus.Error.AccessDenied"
            case .authFailed: "org.freedesktop.DBus.Error.AuthFailed"
            case .noServer: "org.freedesktop.DBus.Error.NoServer"
            case .timeout: "org.freedesktop.DBus.Error.Timeout"
            case .timedOut: "org.freedesktop.DBus.Error.TimedOut"
            case .disconnected: "org.freedesktop.DBus.Error.Disconnected"
            case .invalidArgs: "org.freedesktop.DBus.Error.InvalidArgs"
            case .invalidSignature: "org.freedesktop.DBus.Error.InvalidSignature"
            case .unknownMethod: "org.freedesktop.DBus.Error.UnknownMethod"
            case .unknownObject: "org.freedesktop.DBus.Error.UnknownObject"
            case .unknownInterface: "org.freedesktop.DBus.Error.UnknownInterface"
            case .unknownProperty: "org.freedesktop.DBus.Error.UnknownProperty"
            case .propertyReadOnly: "org.freedesktop.DBus.Error.PropertyReadOnly"
            case .matchRuleNotFound: "org.freedesktop.DBus.Error.MatchRuleNotFound"
            case .matchRuleInvalid: "org.freedesktop.DBus.Error.MatchRuleInvalid"
            case .inconsistentMessage: "org.freedesktop.DBus.Error.InconsistentMessage"
            case .fileNotFound: "org.freedesktop.DBus.Error.FileNotFound"
            case .other(let name): name
            }
        }

        private static let known: [Code] = [
            .failed, .noMemory, .serviceUnknown, .nameHasNoOwner, .noReply, .ioError, .badAddress, .notSupported,
            .limitsExceeded, .accessDenied, .authFailed, .noServer, .timeout, .timedOut, .disconnected,
            .invalidArgs, .invalidSignature, .unknownMethod, .unknownObject, .unknownInterface, .unknownProperty,
            .propertyReadOnly, .matchRuleNotFound, .matchRuleInvalid, .inconsistentMessage, .fileNotFound,
        ]

        private static let codesByName: [String: Code] = Dictionary(
            uniqueKeysWithValues: known.map { ($0.name, $0) }
        )
    }

    public let code: Code
    public let message: String

    /// The dotted error name, e.g. `org.freedesktop.DBus.Error.UnknownMethod`.
    public var name: String { code.name }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An error by name, as received in an error reply or thrown by a method handler.
    public init(name: String, message: String) {
        self.init(Code(name: name), message)
    }

    public static func == (lhs: DBusError, rhs: DBusError) -> Bool {
        lhs.code == rhs.code
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
    }

    public var description: String {
        message.isEmpty ? name : "\(name): \(message)"
    }

    /// The connection to the bus is gone (closed locally or the bus went away).
    static let connectionClosed = DBusError(.disconnected, "The connection to the bus is closed")
}
