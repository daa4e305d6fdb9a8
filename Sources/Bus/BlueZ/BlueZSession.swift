import DBus

/// The D-Bus connection BlueZ is reached through (bluer's `session.rs`): calls to `org.bluez` with errors mapped
/// to `BlueZError`, property access, and PropertiesChanged subscriptions for the bounded waits.
public struct BlueZSession: Sendable {
    public static let serviceName = "org.bluez"
    public static let defaultTimeout: Duration = .seconds(10)

    public let connection: DBusConnection
    /// Where StartNotify streams are received, when set: a wire-protocol connection that reads each Value
    /// PropertiesChanged in place (see `DBusWireConnection`). BlueZ ties a notify session to the bus name that
    /// called StartNotify, so StartNotify and StopNotify go through this connection too.
    public let notifications: DBusWireConnection?

    public init(connection: DBusConnection, notifications: DBusWireConnection? = nil) {
        self.connection = connection
        self.notifications = notifications
    }

    /// Calls a BlueZ method; D-Bus errors come back as `BlueZError`.
    public func call(
        _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
        timeout: Duration = BlueZSession.defaultTimeout
    ) async throws -> [DBusValue] {
        do {
            return try await connection.call(
                destination: Self.serviceName, path: path, interface: interface, member: member,
                arguments: arguments, timeout: timeout)
        } catch {
            throw BlueZError.mapping(error)
        }
    }

    /// `Properties.GetAll`, variants unwrapped.
    public func properties(_ path: DBusObjectPath, _ interface: String) async throws -> [String: DBusValue] {
        let reply = try await call(path, BlueZInterfaceName.properties, "GetAll", [.string(interface)])
        guard let dictionary = reply.first?.variantDictionaryValue else {
            throw BlueZError.dbus(DBusError(.inconsistentMessage, "GetAll(\(interface)) on \(path) returned \(reply)"))
        }
        return dictionary
    }

    /// `Properties.Get`, variant unwrapped.
    public func property(_ path: DBusObjectPath, _ interface: String, _ name: String) async throws -> DBusValue {
        let reply = try await call(path, BlueZInterfaceName.properties, "Get", [.string(interface), .string(name)])
        guard let value = reply.first?.variantValue else {
            throw BlueZError.dbus(DBusError(.inconsistentMessage, "Get(\(name)) on \(path) returned \(reply)"))
        }
        return value
    }

    /// `Properties.Set`.
    public func setProperty(_ path: DBusObjectPath, _ interface: String, _ name: String, _ value: DBusValue)
        async throws
    {
        _ = try await call(
            path, BlueZInterfaceName.properties, "Set", [.string(interface), .string(name), .variant(value)])
    }

    /// PropertiesChanged of one interface at one path. Returns once the bus is watching, so a change made after
    /// this returns is delivered: subscribe first, then read, then wait.
    public func propertyChanges(_ path: DBusObjectPath, _ interface: String) async throws
        -> AsyncStream<PropertyChange>
    {
        let rule = DBusMatchRule(
            sender: Self.serviceName, interface: BlueZInterfaceName.properties, member: "PropertiesChanged",
            path: path, arguments: [0: interface])
        let signals: AsyncStream<DBusSignal>
        do {
            signals = try await connection.signals(matching: rule)
        } catch {
            throw BlueZError.mapping(error)
        }
        return AsyncStream { continuation in
            let forwarding = Task {
                for await signal in signals {
                    if let change = PropertyChange(signal) { continuation.yield(change) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in forwarding.cancel() }
        }
    }
}

/// One PropertiesChanged: the changed values (variants unwrapped) and the invalidated names.
public struct PropertyChange: Hashable, Sendable {
    public let path: DBusObjectPath
    public let interface: String
    public let changed: [String: DBusValue]
    public let invalidated: [String]

    public init(path: DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String]) {
        self.path = path
        self.interface = interface
        self.changed = changed
        self.invalidated = invalidated
    }

    init?(_ signal: DBusSignal) {
        guard signal.member == "PropertiesChanged", signal.arguments.count == 3,
            let interface = signal.arguments[0].stringValue,
            let changed = signal.arguments[1].variantDictionaryValue
        else { return nil }
        self.init(
            path: signal.path, interface: interface, changed: changed,
            invalidated: signal.arguments[2].stringsValue ?? [])
    }
}

/// BlueZ's interface names.
public enum BlueZInterfaceName {
    public static let adapter = "org.bluez.Adapter1"
    public static let device = "org.bluez.Device1"
    public static let gattService = "org.bluez.GattService1"
    public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    public static let gattDescriptor = "org.bluez.GattDescriptor1"
    public static let agentManager = "org.bluez.AgentManager1"
    public static let agent = "org.bluez.Agent1"
    static let properties = "org.freedesktop.DBus.Properties"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
}

/// Runs `body`, throwing `BlueZError.timeout` if it has not finished within `timeout` (the body is cancelled).
func withBlueZTimeout<Result: Sendable>(
    _ timeout: Duration, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else {
            throw BlueZError.timeout
        }
        return result
    }
}

/// Waits for the first element of `stream` that satisfies `match`; nil if the stream ends first.
func firstMatch<Element: Sendable>(
    in stream: AsyncStream<Element>, _ match: @Sendable (Element) -> Bool
) async -> Element? {
    for await element in stream where match(element) {
        return element
    }
    return nil
}
