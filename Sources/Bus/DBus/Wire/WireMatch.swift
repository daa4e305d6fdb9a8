/// A match rule compiled to bytes, checked against received headers without building strings.
///
/// The bus already delivers only what some rule of this connection matches; this decides which of the
/// connection's subscriptions a message belongs to. A class: matching runs for every subscription on every
/// signal, and a struct of six arrays would be copied (six retains, six releases) each time it is read.
final class WireMatch: Sendable {
    private enum SenderCheck {
        case any
        case unique([UInt8])
        /// A well-known name (`org.bluez`): the bus checks that a *broadcast* signal comes from the name's
        /// current owner before routing it by this rule, so broadcasts are trusted and unicast signals (which the
        /// bus delivers to their destination whatever the rules say, from anyone policy lets through) are not.
        case wellKnown
    }

    private let sender: SenderCheck
    private let path: [UInt8]?
    private let pathNamespace: [UInt8]?
    private let interface: [UInt8]?
    private let member: [UInt8]?
    private let destination: [UInt8]?
    private let firstArgument: [UInt8]?

    init(_ rule: DBusMatchRule) throws {
        try rule.validate()
        if let name = rule.sender {
            sender = WireNames.isUniqueName(name) ? .unique(Array(name.utf8)) : .wellKnown
        } else {
            sender = .any
        }
        path = rule.path.map { Array($0.rawValue.utf8) }
        pathNamespace = rule.pathNamespace.map { Array($0.rawValue.utf8) }
        interface = rule.interface.map { Array($0.utf8) }
        member = rule.member.map { Array($0.utf8) }
        destination = rule.destination.map { Array($0.utf8) }
        guard rule.arguments.keys.allSatisfy({ $0 == 0 }) else {
            throw DBusError(.notSupported, "Wire-protocol subscriptions match only arg0")
        }
        firstArgument = rule.arguments[0].map { Array($0.utf8) }
    }

    func matches(_ message: WireMessageView) -> Bool {
        if let path, !WireMessageView.field(message.path, equals: path) { return false }
        if let interface, !WireMessageView.field(message.interface, equals: interface) { return false }
        if let member, !WireMessageView.field(message.member, equals: member) { return false }
        if let destination, !WireMessageView.field(message.destination, equals: destination) { return false }
        switch sender {
        case .any: break
        case .unique(let name): guard WireMessageView.field(message.sender, equals: name) else { return false }
        case .wellKnown: guard message.destination == nil else { return false }
        }
        if let pathNamespace, let signalPath = message.path, !Self.path(signalPath, isIn: pathNamespace) { return false }
        if let firstArgument {
            guard let signature = message.signature, signature.first == UInt8(ascii: "s") else { return false }
            var body = message.body
            guard let argument = try? body.readStringBytes(),
                firstArgument.withUnsafeBytes({ DBusWireReader.same($0, argument) })
            else { return false }
        }
        return true
    }

    /// Spec: path_namespace matches the path itself and every path below it.
    private static func path(_ path: UnsafeRawBufferPointer, isIn namespace: [UInt8]) -> Bool {
        if namespace == [UInt8(ascii: "/")] { return true }
        guard path.count >= namespace.count,
            namespace.withUnsafeBytes({ DBusWireReader.same($0, UnsafeRawBufferPointer(rebasing: path[0..<namespace.count])) })
        else { return false }
        return path.count == namespace.count || path[namespace.count] == UInt8(ascii: "/")
    }
}
