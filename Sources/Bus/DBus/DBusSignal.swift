/// A signal received from the bus.
public struct DBusSignal: Sendable, Hashable {
    /// The unique name of the connection that emitted it (`org.freedesktop.DBus` for the bus itself).
    public let sender: String
    public let path: DBusObjectPath
    public let interface: String
    public let member: String
    /// Set when the signal was unicast to this connection rather than broadcast.
    public let destination: String?
    public let arguments: [DBusValue]

    public init(
        sender: String,
        path: DBusObjectPath,
        interface: String,
        member: String,
        destination: String? = nil,
        arguments: [DBusValue]
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.destination = destination
        self.arguments = arguments
    }
}
