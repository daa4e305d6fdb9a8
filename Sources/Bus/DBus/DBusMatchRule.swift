/// Which signals a subscription wants: the fields of a D-Bus match rule (`type='signal'` is implied).
///
/// The rule is sent to the bus with AddMatch so the bus forwards those signals, and is also checked here
/// against every received signal, because one connection receives the union of all its rules and each
/// subscription must see only its own.
public struct DBusMatchRule: Hashable, Sendable {
    /// A unique name (`:1.7`) or a well-known name (`org.bluez`); a well-known name matches its current owner.
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: DBusObjectPath?
    /// Matches this path and every path below it.
    public var pathNamespace: DBusObjectPath?
    public var destination: String?
    /// `argN='value'`: argument N (0...63) must be a string equal to the value.
    public var arguments: [Int: String]

    public init(
        sender: String? = nil,
        interface: String? = nil,
        member: String? = nil,
        path: DBusObjectPath? = nil,
        pathNamespace: DBusObjectPath? = nil,
        destination: String? = nil,
        arguments: [Int: String] = [:]
    ) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.destination = destination
        self.arguments = arguments
    }

    /// Spec: argument indexes in match rules run from 0 to 63.
    static let maximumArgumentIndex = 63

    /// The rule in the bus's text syntax, e.g. `type='signal',sender='org.bluez',member='InterfacesAdded'`.
    public var text: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            if let value { parts.append("\(key)=\(Self.quoted(value))") }
        }
        add("sender", sender)
        add("interface", interface)
        add("member", member)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("destination", destination)
        for (index, value) in arguments.sorted(by: { $0.key < $1.key }) {
            add("arg\(index)", value)
        }
        return parts.joined(separator: ",")
    }

    /// Throws if the bus would reject the rule (or libdbus would abort on one of its names).
    public func validate() throws {
        if let sender { try WireNames.requireBusName(sender) }
        if let interface { try WireNames.requireInterface(interface) }
        if let member { try WireNames.requireMember(member) }
        if let path { try WireNames.requirePath(path) }
        if let pathNamespace { try WireNames.requirePath(pathNamespace) }
        if let destination { try WireNames.requireBusName(destination) }
        guard path == nil || pathNamespace == nil else {
            throw DBusError(.matchRuleInvalid, "A match rule cannot have both path and path_namespace")
        }
        for (index, value) in arguments {
            guard (0...Self.maximumArgumentIndex).contains(index) else {
                throw DBusError(.matchRuleInvalid, "Match rule argument index \(index) is outside 0...63")
            }
            guard !value.utf8.contains(0) else {
                throw DBusError(.matchRuleInvalid, "Match rule argument \(index) contains a NUL character")
            }
        }
    }

    /// Whether the signal's header fields match, leaving the sender (which may need owner resolution) aside.
    func matchesHeader(path signalPath: DBusObjectPath, interface signalInterface: String, member signalMember: String,
                       destination signalDestination: String?) -> Bool
    {
        if let interface, interface != signalInterface { return false }
        if let member, member != signalMember { return false }
        if let path, path != signalPath { return false }
        if let pathNamespace, !signalPath.isInNamespace(pathNamespace) { return false }
        if let destination, destination != signalDestination { return false }
        return true
    }

    /// Whether the `argN` conditions hold for these arguments.
    func matchesArguments(_ signalArguments: [DBusValue]) -> Bool {
        arguments.allSatisfy { index, expected in
            signalArguments.indices.contains(index) && signalArguments[index].stringValue == expected
        }
    }

    /// Match-rule values are single-quoted; a quote inside is written as `'\''` (close, escaped quote, reopen).
    private static func quoted(_ value: String) -> String {
        "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
