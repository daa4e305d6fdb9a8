/// A method call received by an exported object, as its handler sees it.
public struct DBusMethodCall: Sendable {
    /// The unique name of the caller, e.g. `:1.42`; use it to tie state (such as notify sessions) to a client.
    public let sender: String
    public let path: DBusObjectPath
    /// Nil when the caller did not name an interface (allowed by D-Bus for method calls).
    public let interface: String?
    public let member: String
    public let signature: DBusSignature
    public let arguments: [DBusValue]

    public init(
        sender: String,
        path: DBusObjectPath,
        interface: String?,
        member: String,
        signature: DBusSignature,
        arguments: [DBusValue]
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.signature = signature
        self.arguments = arguments
    }
}
