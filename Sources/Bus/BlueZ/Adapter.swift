import DBus

/// `org.bluez.Adapter1`: a local Bluetooth controller, e.g. `/org/bluez/hci0`.
public struct Adapter: Hashable, Sendable {
    public let path: DBusObjectPath
    let session: BlueZSession

    public init(session: BlueZSession, path: DBusObjectPath = "/org/bluez/hci0") {
        self.session = session
        self.path = path
    }

    public static func == (lhs: Adapter, rhs: Adapter) -> Bool { lhs.path == rhs.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }

    /// The object path of the device with `address` under this adapter (`dev_AA_BB_CC_DD_EE_FF`).
    public func devicePath(address: String) -> DBusObjectPath {
        path.appending("dev_" + String(address.uppercased().map { $0 == ":" ? "_" : $0 }))
    }

    public func device(address: String) -> Device {
        Device(session: session, path: devicePath(address: address))
    }

    /// All Adapter1 properties (Address, Powered, Discovering, Roles, ...).
    public func properties() async throws -> [String: DBusValue] {
        try await session.properties(path, BlueZInterfaceName.adapter)
    }

    public func isPowered() async throws -> Bool {
        try await session.property(path, BlueZInterfaceName.adapter, "Powered").boolValue ?? false
    }

    /// Sets `Powered=true` and waits (bounded) until the adapter reports it.
    public func powerOn(timeout: Duration = BlueZSession.defaultTimeout) async throws {
        let changes = try await session.propertyChanges(path, BlueZInterfaceName.adapter)
        if try await isPowered() { return }
        try await session.setProperty(path, BlueZInterfaceName.adapter, "Powered", .bool(true))
        if try await isPowered() { return }
        let powered = try await withBlueZTimeout(timeout) {
            await firstMatch(in: changes) { $0.changed["Powered"] == .bool(true) } != nil
        }
        guard powered else { throw BlueZError.dbus(DBusError(.disconnected, "org.bluez went away")) }
    }

    /// `SetDiscoveryFilter(a{sv})`.
    public func setDiscoveryFilter(_ filter: DiscoveryFilter) async throws {
        _ = try await session.call(path, BlueZInterfaceName.adapter, "SetDiscoveryFilter", [filter.value])
    }

    /// `StartDiscovery()`. The session belongs to this connection: BlueZ stops it when the connection leaves.
    public func startDiscovery() async throws {
        _ = try await session.call(path, BlueZInterfaceName.adapter, "StartDiscovery")
    }

    /// `StopDiscovery()`. BlueZ then invalidates the devices' RSSI and TxPower.
    public func stopDiscovery() async throws {
        _ = try await session.call(path, BlueZInterfaceName.adapter, "StopDiscovery")
    }

    /// `RemoveDevice(o)`: drops the link, the bond and the cached GATT database (stale after a firmware update).
    public func removeDevice(_ device: DBusObjectPath) async throws {
        _ = try await session.call(path, BlueZInterfaceName.adapter, "RemoveDevice", [.objectPath(device)])
    }
}

/// The `SetDiscoveryFilter` dictionary: only the keys that are set are sent.
public struct DiscoveryFilter: Hashable, Sendable {
    public enum Transport: String, Hashable, Sendable {
        case auto, bredr, le
    }

    public var uuids: [String]
    public var rssi: Int16?
    public var transport: Transport?
    /// Report every advertisement (RSSI updates) rather than only changes.
    public var duplicateData: Bool?
    public var discoverable: Bool?

    public init(
        uuids: [String] = [], rssi: Int16? = nil, transport: Transport? = .le, duplicateData: Bool? = nil,
        discoverable: Bool? = nil
    ) {
        self.uuids = uuids
        self.rssi = rssi
        self.transport = transport
        self.duplicateData = duplicateData
        self.discoverable = discoverable
    }

    var value: DBusValue {
        var entries: [String: DBusValue] = [:]
        if !uuids.isEmpty { entries["UUIDs"] = .strings(uuids) }
        if let rssi { entries["RSSI"] = .int16(rssi) }
        if let transport { entries["Transport"] = .string(transport.rawValue) }
        if let duplicateData { entries["DuplicateData"] = .bool(duplicateData) }
        if let discoverable { entries["Discoverable"] = .bool(discoverable) }
        return .variantDictionary(entries)
    }
}
