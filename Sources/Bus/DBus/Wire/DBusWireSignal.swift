/// A signal received on a `DBusWireConnection`, handed to a subscription's filter while it is being dispatched.
///
/// Nothing is decoded until asked for: `body` reads the arguments in place (a notification's bytes are one copy
/// away from the wire), `arguments()` decodes them all. Do not keep the signal or anything borrowed from its
/// body past the filter call.
public struct DBusWireSignal {
    let message: WireMessageView

    public var path: DBusObjectPath { DBusObjectPath(WireMessageView.string(message.path) ?? "") }
    public var interface: String { WireMessageView.string(message.interface) ?? "" }
    public var member: String { WireMessageView.string(message.member) ?? "" }
    /// The unique name of the sender.
    public var sender: String { WireMessageView.string(message.sender) ?? "" }
    /// The body's signature.
    public var signature: DBusSignature { DBusSignature(WireMessageView.string(message.signature) ?? "") }

    /// Whether the body's signature is exactly `expected` (checked without building strings).
    public func hasSignature(_ expected: String) -> Bool {
        guard let signature = message.signature else { return expected.isEmpty }
        return DBusWireReader.bytes(signature, equal: expected)
    }

    /// A reader at the first argument.
    public var body: DBusWireReader { message.body }

    /// Every argument, decoded.
    public func arguments() throws -> [DBusValue] {
        try message.arguments()
    }
}
