import Synchronization

/// The objects a connection exports: paths with interfaces, answered with standard D-Bus semantics.
///
/// Every object also gets `org.freedesktop.DBus.Introspectable` and `org.freedesktop.DBus.Properties`
/// (`org.freedesktop.DBus.Peer` is answered by libdbus). An object manager added at a root path answers
/// `GetManagedObjects` for the objects below it and announces exports and removals there with
/// `InterfacesAdded` / `InterfacesRemoved`, listing Introspectable and Properties with empty dictionaries beside
/// the real interfaces as BlueZ does.
///
/// Method handlers, getters and setters run as tasks, never on the connection's loop thread. Calls of one sender
/// are handled in the order it sent them unless a method is declared `.concurrent` (see `DBusMethod`).
public final class DBusObjectServer: Sendable {
    let loop: ConnectionLoop<ConnectionCore>
    let registry = Mutex(ObjectRegistry())
    let senderQueues = Mutex(SenderQueues())

    /// Senders with an ordered call running or waiting (zero when idle; for leak checks).
    public var sendersWithPendingCalls: Int { senderQueues.withLock { $0.activeSenders } }

    init(loop: ConnectionLoop<ConnectionCore>) {
        self.loop = loop
    }

    /// The paths with at least one exported interface, sorted.
    public var exportedPaths: [DBusObjectPath] {
        registry.withLock { $0.objects.keys.sorted() }
    }

    /// Exports `interfaces` at `path` (adding to an object already there) and announces them to its manager.
    ///
    /// Property values for `InterfacesAdded` are read before the object becomes visible, so the announcement
    /// carries the values a following `GetManagedObjects` would see. Add object managers before exporting
    /// beneath them: an export racing `addObjectManager` is not announced.
    public func export(_ interfaces: [DBusInterface], at path: DBusObjectPath) async throws {
        try WireNames.requirePath(path)
        var names = Set<String>()
        for interface in interfaces {
            try interface.validate()
            guard names.insert(interface.name).inserted else {
                throw DBusError(.invalidArgs, "Interface '\(interface.name)' is listed twice for '\(path.rawValue)'")
            }
        }
        let isManaged = registry.withLock { $0.managerRoot(for: path) != nil }
        var announced: [(name: String, properties: [DBusDictionaryEntry])] = []
        if isManaged {
            for interface in interfaces {
                announced.append((interface.name, await Self.readableProperties(of: interface)))
            }
        }
        try registry.withLock { registry in
            let isNewObject = registry.objects[path] == nil
            try registry.add(interfaces, at: path)
            guard let root = registry.managerRoot(for: path), isManaged else { return }
            if isNewObject {
                announced += StandardInterfaceName.announcedWithEveryObject.map { ($0, []) }
            }
            // Sent under the registry lock so announcements leave in the same order as the changes.
            emitQuietly(Self.interfacesAdded(root: root, path: path, interfaces: announced))
        }
    }

    /// Removes the object at `path` with all its interfaces; returns false if nothing was exported there.
    @discardableResult
    public func unexport(_ path: DBusObjectPath) -> Bool {
        registry.withLock { registry in
            guard let removed = registry.removeObject(at: path) else { return false }
            if let root = registry.managerRoot(for: path) {
                let names = removed.map(\.name) + StandardInterfaceName.announcedWithEveryObject
                emitQuietly(Self.interfacesRemoved(root: root, path: path, names: names))
            }
            return true
        }
    }

    /// Removes one interface from the object at `path`; the object goes when its last interface does.
    @discardableResult
    public func removeInterface(named name: String, at path: DBusObjectPath) -> Bool {
        registry.withLock { registry in
            let objectWillGo = registry.objects[path]?.count == 1
            guard registry.removeInterface(named: name, at: path) else { return false }
            if let root = registry.managerRoot(for: path) {
                let names = [name] + (objectWillGo ? StandardInterfaceName.announcedWithEveryObject : [])
                emitQuietly(Self.interfacesRemoved(root: root, path: path, names: names))
            }
            return true
        }
    }

    /// Makes `root` an `org.freedesktop.DBus.ObjectManager` for the objects below it.
    public func addObjectManager(at root: DBusObjectPath) throws {
        try WireNames.requirePath(root)
        registry.withLock { $0.addManager(at: root) }
    }

    public func removeObjectManager(at root: DBusObjectPath) {
        registry.withLock { $0.removeManager(at: root) }
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for an interface at `path`.
    public func emitPropertiesChanged(
        path: DBusObjectPath,
        interface: String,
        changed: [String: DBusValue],
        invalidated: [String] = []
    ) throws {
        try WireNames.requireInterface(interface)
        let message = try MessageReference.signal(
            path: path, interface: StandardInterfaceName.properties, member: "PropertiesChanged", destination: nil)
        try message.append([.string(interface), .variantDictionary(changed), .strings(invalidated)])
        try send(message)
    }

    /// Reads the named properties through their getters and emits them as changed.
    public func emitPropertiesChanged(path: DBusObjectPath, interface: String, reading names: [String]) async throws {
        guard let declared = registry.withLock({ $0.objects[path]?.first { $0.name == interface } }) else {
            throw DBusError(.unknownInterface, "No interface '\(interface)' at '\(path.rawValue)'")
        }
        var changed: [String: DBusValue] = [:]
        for name in names {
            guard let property = declared.property(named: name) else {
                throw DBusError(.unknownProperty, "No property '\(name)' in '\(interface)'")
            }
            changed[name] = try await Self.read(property)
        }
        try emitPropertiesChanged(path: path, interface: interface, changed: changed)
    }

    // MARK: Sending

    func send(_ message: MessageReference) throws {
        let accepted = loop.submit { core in
            _ = try? core?.send(message)
        }
        guard accepted else { throw DBusError.connectionClosed }
    }

    /// Announcements from export/unexport are best effort: with the connection gone nobody can hear them.
    private func emitQuietly(_ message: MessageReference?) {
        guard let message else { return }
        _ = try? send(message)
    }

    private static func interfacesAdded(
        root: DBusObjectPath,
        path: DBusObjectPath,
        interfaces: [(name: String, properties: [DBusDictionaryEntry])]
    ) -> MessageReference? {
        let entries = interfaces.map { interface in
            DBusDictionaryEntry(
                key: .string(interface.name),
                value: .dictionary(keySignature: "s", valueSignature: "v", interface.properties))
        }
        return try? objectManagerSignal(
            "InterfacesAdded", root: root,
            arguments: [.objectPath(path), .dictionary(keySignature: "s", valueSignature: "a{sv}", entries)])
    }

    private static func interfacesRemoved(root: DBusObjectPath, path: DBusObjectPath, names: [String])
        -> MessageReference?
    {
        try? objectManagerSignal("InterfacesRemoved", root: root, arguments: [.objectPath(path), .strings(names)])
    }

    private static func objectManagerSignal(_ member: String, root: DBusObjectPath, arguments: [DBusValue]) throws
        -> MessageReference
    {
        let message = try MessageReference.signal(
            path: root, interface: StandardInterfaceName.objectManager, member: member, destination: nil)
        try message.append(arguments)
        return message
    }

    // MARK: Reading properties

    /// One property's value, checked against its declared signature.
    static func read(_ property: DBusProperty) async throws -> DBusValue {
        let value: DBusValue
        do {
            value = try await property.getter()
        } catch let error as DBusError {
            throw error
        } catch {
            throw DBusError(.failed, "Reading property '\(property.name)' failed: \(error)")
        }
        guard value.signature == property.signature else {
            throw DBusError(
                .failed,
                "Property '\(property.name)' is declared '\(property.signature.rawValue)' "
                    + "but its getter returned '\(value.signature.rawValue)'")
        }
        try value.validateForWire()
        return value
    }

    /// Every property that can be read right now, as `a{sv}` entries; a failing getter leaves its property out
    /// rather than failing GetAll/GetManagedObjects for the whole object.
    static func readableProperties(of interface: DBusInterface) async -> [DBusDictionaryEntry] {
        var entries: [DBusDictionaryEntry] = []
        for property in interface.properties {
            if let value = try? await read(property) {
                entries.append(DBusDictionaryEntry(key: .string(property.name), value: .variant(value)))
            }
        }
        return entries
    }
}

extension StandardInterfaceName {
    /// Listed with empty property dictionaries beside an object's own interfaces, as BlueZ does.
    static let announcedWithEveryObject = [introspectable, properties]
}
