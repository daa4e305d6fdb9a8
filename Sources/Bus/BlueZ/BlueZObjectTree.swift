import DBus

/// A mirror of org.bluez's object tree: `GetManagedObjects`, kept current by InterfacesAdded, InterfacesRemoved
/// and PropertiesChanged.
///
/// - Signals are subscribed before `GetManagedObjects` is called, so nothing that changes in between is missed
///   (the buffered signals are applied after the snapshot; each is a delta, so replaying one the snapshot already
///   contains changes nothing).
/// - Only signals from the current unique-name owner of `org.bluez` are applied.
/// - When `org.bluez` changes owner (bluetoothd restarted or stopped) all state is dropped, `.bluezRestarted` is
///   emitted and, once a new owner exists, the tree is synchronised again.
///
/// `run()` is the long-running loop (run it as a service); `events()` gives each caller its own stream.
public actor BlueZObjectTree {
    public typealias Interfaces = [String: [String: DBusValue]]

    public enum Event: Hashable, Sendable {
        /// A Device1 appeared (discovery, or found by a synchronisation), with its properties.
        case deviceAdded(DBusObjectPath, [String: DBusValue])
        case deviceRemoved(DBusObjectPath)
        /// PropertiesChanged on a Device1.
        case deviceChanged(DBusObjectPath, changed: [String: DBusValue], invalidated: [String])
        /// PropertiesChanged on any other interface (adapter, GATT characteristic Value, ...).
        case propertiesChanged(DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String])
        /// Interfaces other than Device1 appeared or went away (adapter, GATT objects).
        case interfacesAdded(DBusObjectPath, [String])
        case interfacesRemoved(DBusObjectPath, [String])
        /// org.bluez changed owner: everything known before is gone. `owner` is the new owner, nil while none.
        case bluezRestarted(owner: String?)
        /// A `GetManagedObjects` snapshot was applied (after start and after every restart).
        case synchronized(objectCount: Int)
    }

    public let session: BlueZSession
    private var objects: [DBusObjectPath: Interfaces] = [:]
    private var owner: String?
    private var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:]
    private var nextSubscriber: UInt64 = 0
    private var synchronizations = 0

    public init(session: BlueZSession) {
        self.session = session
    }

    // MARK: Reading

    /// Every object and its interfaces' properties.
    public var snapshot: [DBusObjectPath: Interfaces] { objects }

    public func interfaces(at path: DBusObjectPath) -> Interfaces? { objects[path] }

    /// Devices (objects with Device1) and their Device1 properties.
    public var devices: [DBusObjectPath: [String: DBusValue]] {
        objects.compactMapValues { $0[BlueZInterfaceName.device] }
    }

    /// The GATT services BlueZ exports below `device` (after ServicesResolved), with their characteristics.
    public func services(of device: DBusObjectPath) -> [GattService] {
        GattService.services(of: device, in: objects)
    }

    /// The characteristic `uuid` of the service `service` below `device`, if exported. Lookups are always scoped to a
    /// service: a characteristic UUID may appear in several (RACP 0x2A52 in Glucose and in CGM).
    public func characteristic(uuid: String, inService service: String, of device: DBusObjectPath) -> DBusObjectPath? {
        guard let wantedService = GattUUID.normalized(service) else { return nil }
        return services(of: device).first { $0.uuid == wantedService }?.characteristic(uuid)?.path
    }

    /// The unique name whose signals are applied.
    public var currentOwner: String? { owner }

    /// How many snapshots have been applied (1 after start, +1 per restart).
    public var synchronizationCount: Int { synchronizations }

    /// A stream of tree events from now on; it ends when `run()` ends or the caller stops iterating.
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let id = nextSubscriber
        nextSubscriber += 1
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: UInt64) {
        subscribers[id] = nil
    }

    // MARK: Running

    /// Subscribes, synchronises and applies changes until the task is cancelled or the connection goes away.
    /// Throws if a synchronisation fails (the mirror would be stale): run it under a supervisor that restarts it.
    public func run() async throws {
        let connection = session.connection
        let ownerChanges: AsyncStream<DBusNameOwnerChange>
        let signals: AsyncStream<DBusSignal>
        do {
            // Subscribe first, then read: whatever changes after these return is delivered.
            ownerChanges = try await connection.nameOwnerChanges(of: BlueZSession.serviceName)
            signals = try await connection.signals(matching: DBusMatchRule(sender: BlueZSession.serviceName))
            owner = try await connection.nameOwner(of: BlueZSession.serviceName)
        } catch {
            throw BlueZError.mapping(error)
        }
        if owner != nil { try await synchronize() }
        defer { finishSubscribers() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await change in ownerChanges { try await self.ownerChanged(change) }
            }
            group.addTask {
                for await signal in signals { await self.apply(signal) }
            }
            // Either stream ending means the connection is gone.
            _ = try await group.next()
            group.cancelAll()
        }
    }

    private func finishSubscribers() {
        for continuation in subscribers.values { continuation.finish() }
        subscribers.removeAll()
    }

    private func emit(_ event: Event) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    /// Replaces the state with a GetManagedObjects snapshot.
    private func synchronize() async throws {
        let expectedOwner = owner
        let reply: [DBusValue]
        do {
            reply = try await session.call(.root, BlueZInterfaceName.objectManager, "GetManagedObjects")
        } catch BlueZError.dbus(let error) where error.code == .serviceUnknown || error.code == .nameHasNoOwner {
            return  // bluetoothd left meanwhile; its NameOwnerChanged follows.
        }
        // The owner changed while the call was out: a newer synchronisation follows.
        guard owner == expectedOwner else { return }
        let snapshot = Self.parseManagedObjects(reply.first)
        let previous = objects
        objects = snapshot
        for (path, interfaces) in snapshot.sorted(by: { $0.key < $1.key }) {
            if let device = interfaces[BlueZInterfaceName.device], previous[path]?[BlueZInterfaceName.device] == nil {
                emit(.deviceAdded(path, device))
            }
        }
        for (path, interfaces) in previous where interfaces[BlueZInterfaceName.device] != nil {
            if snapshot[path]?[BlueZInterfaceName.device] == nil { emit(.deviceRemoved(path)) }
        }
        synchronizations += 1
        emit(.synchronized(objectCount: snapshot.count))
    }

    private func ownerChanged(_ change: DBusNameOwnerChange) async throws {
        guard change.newOwner != owner else { return }
        owner = change.newOwner
        let dropped = objects.filter { $0.value[BlueZInterfaceName.device] != nil }.keys.sorted()
        objects.removeAll()
        emit(.bluezRestarted(owner: change.newOwner))
        for path in dropped { emit(.deviceRemoved(path)) }
        if change.newOwner != nil { try await synchronize() }
    }

    private func apply(_ signal: DBusSignal) {
        guard let owner, signal.sender == owner else { return }
        switch (signal.interface, signal.member) {
        case (BlueZInterfaceName.objectManager, "InterfacesAdded"):
            guard signal.arguments.count == 2, let path = signal.arguments[0].objectPathValue else { return }
            let added = Self.parseInterfaces(signal.arguments[1])
            var interfaces = objects[path] ?? [:]
            let hadDevice = interfaces[BlueZInterfaceName.device] != nil
            var newNames: [String] = []
            for (name, properties) in added {
                if interfaces[name] == nil { newNames.append(name) }
                interfaces[name, default: [:]].merge(properties) { _, new in new }
            }
            objects[path] = interfaces
            if !hadDevice, let device = interfaces[BlueZInterfaceName.device] {
                emit(.deviceAdded(path, device))
            }
            let others = newNames.filter { $0 != BlueZInterfaceName.device && !Self.isStandard($0) }.sorted()
            if !others.isEmpty { emit(.interfacesAdded(path, others)) }

        case (BlueZInterfaceName.objectManager, "InterfacesRemoved"):
            guard signal.arguments.count == 2, let path = signal.arguments[0].objectPathValue,
                let names = signal.arguments[1].stringsValue, var interfaces = objects[path]
            else { return }
            let hadDevice = interfaces[BlueZInterfaceName.device] != nil
            for name in names { interfaces[name] = nil }
            let meaningful = interfaces.keys.filter { !Self.isStandard($0) }
            objects[path] = meaningful.isEmpty ? nil : interfaces
            if hadDevice && names.contains(BlueZInterfaceName.device) { emit(.deviceRemoved(path)) }
            let others = names.filter { $0 != BlueZInterfaceName.device && !Self.isStandard($0) }.sorted()
            if !others.isEmpty { emit(.interfacesRemoved(path, others)) }

        case (BlueZInterfaceName.properties, "PropertiesChanged"):
            guard let change = PropertyChange(signal), objects[signal.path]?[change.interface] != nil else { return }
            objects[signal.path]?[change.interface]?.merge(change.changed) { _, new in new }
            for name in change.invalidated { objects[signal.path]?[change.interface]?[name] = nil }
            if change.interface == BlueZInterfaceName.device {
                emit(.deviceChanged(signal.path, changed: change.changed, invalidated: change.invalidated))
            } else {
                emit(
                    .propertiesChanged(
                        signal.path, interface: change.interface, changed: change.changed,
                        invalidated: change.invalidated))
            }

        default:
            return
        }
    }

    private static func isStandard(_ interface: String) -> Bool {
        interface.hasPrefix("org.freedesktop.DBus.")
    }

    static func parseInterfaces(_ value: DBusValue) -> Interfaces {
        var interfaces: Interfaces = [:]
        for entry in value.dictionaryEntries ?? [] {
            guard let name = entry.key.stringValue else { continue }
            interfaces[name] = entry.value.variantDictionaryValue ?? [:]
        }
        return interfaces
    }

    static func parseManagedObjects(_ value: DBusValue?) -> [DBusObjectPath: Interfaces] {
        var objects: [DBusObjectPath: Interfaces] = [:]
        for entry in value?.dictionaryEntries ?? [] {
            guard let path = entry.key.objectPathValue else { continue }
            objects[path] = parseInterfaces(entry.value)
        }
        return objects
    }
}
