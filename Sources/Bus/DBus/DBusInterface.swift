/// An interface as exported by `DBusObjectServer`: its methods, properties and signals.
///
/// The declarations double as the introspection data and as the type checks on incoming calls: a call whose
/// argument signature differs from the declared inputs is answered with `InvalidArgs` before any handler runs.
public struct DBusInterface: Sendable {
    public let name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDeclaration]

    public init(
        name: String,
        methods: [DBusMethod] = [],
        properties: [DBusProperty] = [],
        signals: [DBusSignalDeclaration] = []
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    public func method(named name: String) -> DBusMethod? {
        methods.first { $0.name == name }
    }

    public func property(named name: String) -> DBusProperty? {
        properties.first { $0.name == name }
    }

    /// Throws if a name or signature would be rejected on the wire, or a member is declared twice.
    func validate() throws {
        try WireNames.requireInterface(name)
        guard !StandardInterfaceName.all.contains(name) else {
            throw DBusError(.invalidArgs, "Interface '\(name)' is provided by the object server itself")
        }
        try Self.requireUnique(methods.map(\.name), kind: "method", in: name)
        try Self.requireUnique(properties.map(\.name), kind: "property", in: name)
        try Self.requireUnique(signals.map(\.name), kind: "signal", in: name)
        for method in methods {
            try WireNames.requireMember(method.name)
            try Self.requireSignatures(method.inputs + method.outputs, of: "method \(method.name)")
        }
        for property in properties {
            try WireNames.requireMember(property.name)
            guard property.signature.isSingleCompleteType else {
                throw DBusError(
                    .invalidSignature,
                    "Property \(name).\(property.name) has signature '\(property.signature.rawValue)'"
                )
            }
        }
        for signal in signals {
            try WireNames.requireMember(signal.name)
            try Self.requireSignatures(signal.arguments, of: "signal \(signal.name)")
        }
    }

    private static func requireUnique(_ names: [String], kind: String, in interface: String) throws {
        var seen = Set<String>()
        for name in names where !seen.insert(name).inserted {
            throw DBusError(.invalidArgs, "The \(kind) '\(name)' is declared twice in '\(interface)'")
        }
    }

    private static func requireSignatures(_ arguments: [DBusArgument], of owner: String) throws {
        for argument in arguments where !argument.signature.isSingleCompleteType {
            throw DBusError(
                .invalidSignature,
                "An argument of \(owner) has signature '\(argument.signature.rawValue)'"
            )
        }
        let combined = DBusSignature(concatenating: arguments.map(\.signature))
        guard combined.isValid else {
            throw DBusError(.invalidSignature, "The arguments of \(owner) exceed D-Bus signature limits")
        }
    }
}

/// A named, typed argument of a method or signal (the name only appears in introspection).
public struct DBusArgument: Hashable, Sendable {
    public var name: String?
    public var signature: DBusSignature

    public init(_ name: String?, _ signature: DBusSignature) {
        self.name = name
        self.signature = signature
    }
}

/// An exported method. The handler runs off the connection's loop thread.
///
/// By default calls are handled in the order each sender sent them: a sender's next ordered call starts once its
/// previous one has been answered (the D-Bus specification makes no promise here, but clients such as bleak
/// pipeline `WriteValue` calls and expect BlueZ's in-order handling). A method whose handler waits for another
/// party (a person answering a pairing prompt, a remote device) is declared `.concurrent`, so it neither waits
/// behind nor holds up the sender's other calls (`CancelPairing` must reach a `Pair` that is still waiting).
public struct DBusMethod: Sendable {
    /// Returns the output values (matching `outputs`) or throws: a thrown `DBusError` is sent with its name and
    /// message, any other error as `org.freedesktop.DBus.Error.Failed`.
    public typealias Handler = @Sendable (DBusMethodCall) async throws -> [DBusValue]

    public enum Dispatch: Hashable, Sendable {
        /// After every earlier ordered call of the same sender has been answered.
        case orderedPerSender
        /// At once, as its own task, concurrently with anything else.
        case concurrent
    }

    public let name: String
    public let inputs: [DBusArgument]
    public let outputs: [DBusArgument]
    public let dispatch: Dispatch
    public let handler: Handler

    public init(
        _ name: String,
        inputs: [DBusArgument] = [],
        outputs: [DBusArgument] = [],
        dispatch: Dispatch = .orderedPerSender,
        handler: @escaping Handler
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.dispatch = dispatch
        self.handler = handler
    }

    public var inputSignature: DBusSignature { DBusSignature(concatenating: inputs.map(\.signature)) }
    public var outputSignature: DBusSignature { DBusSignature(concatenating: outputs.map(\.signature)) }
}

/// An exported property, read (and optionally written) through `org.freedesktop.DBus.Properties`.
///
/// Values live wherever the getter finds them; after a change, announce it with
/// `DBusObjectServer.emitPropertiesChanged`. A setter does not announce anything by itself.
public struct DBusProperty: Sendable {
    public typealias Getter = @Sendable () async throws -> DBusValue
    /// Receives the new value (already checked against `signature`); throw a `DBusError` to refuse it.
    public typealias Setter = @Sendable (DBusValue) async throws -> Void

    public let name: String
    public let signature: DBusSignature
    public let getter: Getter
    public let setter: Setter?

    public init(_ name: String, signature: DBusSignature, getter: @escaping Getter, setter: Setter? = nil) {
        self.name = name
        self.signature = signature
        self.getter = getter
        self.setter = setter
    }

    public var isWritable: Bool { setter != nil }
}

/// A signal an interface may emit (for introspection; emit it with `DBusConnection.emitSignal`).
public struct DBusSignalDeclaration: Hashable, Sendable {
    public let name: String
    public let arguments: [DBusArgument]

    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// The interfaces every exported object gets from the object server.
enum StandardInterfaceName {
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let properties = "org.freedesktop.DBus.Properties"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let peer = "org.freedesktop.DBus.Peer"

    static let all: Set<String> = [introspectable, properties, objectManager, peer]
}
