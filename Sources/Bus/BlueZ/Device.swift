import DBus

/// `org.bluez.Device1`: a remote device, e.g. `/org/bluez/hci0/dev_C0_54_45_00_00_01`.
///
/// Every wait subscribes to PropertiesChanged before it reads the property, and every wait is bounded.
public struct Device: Hashable, Sendable {
    public let path: DBusObjectPath
    let session: BlueZSession

    public init(session: BlueZSession, path: DBusObjectPath) {
        self.session = session
        self.path = path
    }

    public static func == (lhs: Device, rhs: Device) -> Bool { lhs.path == rhs.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }

    /// The address encoded in the path (`dev_C0_54_45_00_00_01` → `C0:54:45:00:00:01`), if it has that shape.
    public var address: String? {
        guard let last = path.elements.last, last.hasPrefix("dev_") else { return nil }
        return String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 })
    }

    /// Device1's properties.
    public func properties() async throws -> DeviceProperties {
        DeviceProperties(try await session.properties(path, BlueZInterfaceName.device))
    }

    /// Connects and returns once the link is up.
    ///
    /// BlueZ 5.66 race (real-bluez-vm.md pitfall 6): `Connect` can bring an LE link up without ever emitting
    /// `Connected=true`. So after the reply this treats `ServicesResolved=true` or a re-read `Connected=true` as
    /// connected, re-reading every `recheckInterval`, and gives up with `.timeout` after `timeout`.
    /// `AlreadyConnected` counts as success.
    public func connect(
        timeout: Duration = .seconds(30), recheckInterval: Duration = .milliseconds(500)
    ) async throws {
        let changes = try await session.propertyChanges(path, BlueZInterfaceName.device)
        let session = session
        let path = path
        try await withBlueZTimeout(timeout) {
            do {
                _ = try await session.call(path, BlueZInterfaceName.device, "Connect", timeout: timeout)
            } catch BlueZError.alreadyConnected {}
            try await Self.waitForLink(session: session, path: path, changes: changes, recheck: recheckInterval)
        }
    }

    /// The 5.66 rule: either property true means the link is up.
    @Sendable static func linkIsUp(_ properties: [String: DBusValue]) -> Bool {
        properties["Connected"] == .bool(true) || properties["ServicesResolved"] == .bool(true)
    }

    /// After Connect replied: a signal or a re-read says the link is up.
    private static func waitForLink(
        session: BlueZSession, path: DBusObjectPath, changes: AsyncStream<PropertyChange>, recheck: Duration
    ) async throws {
        if linkIsUp(try await session.properties(path, BlueZInterfaceName.device)) { return }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                await firstMatch(in: changes) { linkIsUp($0.changed) } != nil
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: recheck)
                    if linkIsUp(try await session.properties(path, BlueZInterfaceName.device)) { return true }
                }
            }
            defer { group.cancelAll() }
            guard try await group.next() == true else {
                throw BlueZError.dbus(DBusError(.disconnected, "org.bluez went away while connecting"))
            }
        }
    }

    /// `Disconnect()`: BlueZ sends ServicesResolved=false, Disconnected, Connected=false, then replies. Not
    /// being connected counts as success.
    public func disconnect(timeout: Duration = .seconds(10)) async throws {
        do {
            _ = try await session.call(path, BlueZInterfaceName.device, "Disconnect", timeout: timeout)
        } catch BlueZError.notConnected {}
    }

    /// `Pair()`: brings the link up itself; passkey or confirmation devices call the registered agent.
    /// Bounded by `timeout` (the user may be typing a passkey).
    public func pair(timeout: Duration = .seconds(60)) async throws {
        _ = try await session.call(path, BlueZInterfaceName.device, "Pair", timeout: timeout)
    }

    /// `CancelPairing()`.
    public func cancelPairing() async throws {
        _ = try await session.call(path, BlueZInterfaceName.device, "CancelPairing")
    }

    /// Sets `Trusted` (after pairing, so the device may reconnect without asking).
    public func setTrusted(_ trusted: Bool) async throws {
        try await session.setProperty(path, BlueZInterfaceName.device, "Trusted", .bool(trusted))
    }

    /// Waits until `Connected` equals `connected`: subscribes, then reads, then waits; `.timeout` after `timeout`.
    public func waitUntil(connected: Bool, timeout: Duration = BlueZSession.defaultTimeout) async throws {
        try await waitFor("Connected", .bool(connected), timeout: timeout)
    }

    /// Waits until `ServicesResolved=true` (the GATT objects are exported); `.timeout` after `timeout`.
    public func waitUntilServicesResolved(timeout: Duration = BlueZSession.defaultTimeout) async throws {
        try await waitFor("ServicesResolved", .bool(true), timeout: timeout)
    }

    private func waitFor(_ name: String, _ value: DBusValue, timeout: Duration) async throws {
        let changes = try await session.propertyChanges(path, BlueZInterfaceName.device)
        let session = session
        let path = path
        try await withBlueZTimeout(timeout) {
            if try await session.property(path, BlueZInterfaceName.device, name) == value { return }
            guard await firstMatch(in: changes, { $0.changed[name] == value }) != nil else {
                throw BlueZError.dbus(DBusError(.disconnected, "org.bluez went away while waiting for \(name)"))
            }
        }
    }

    /// The `Disconnected(s reason, s message)` signals of this device (BlueZ ≥ 5.76), e.g.
    /// `org.bluez.Reason.Remote`.
    public func disconnections() async throws -> AsyncStream<(reason: String, message: String)> {
        let rule = DBusMatchRule(
            sender: BlueZSession.serviceName, interface: BlueZInterfaceName.device, member: "Disconnected", path: path)
        let signals: AsyncStream<DBusSignal>
        do {
            signals = try await session.connection.signals(matching: rule)
        } catch {
            throw BlueZError.mapping(error)
        }
        return AsyncStream { continuation in
            let forwarding = Task {
                for await signal in signals {
                    guard signal.arguments.count == 2, let reason = signal.arguments[0].stringValue,
                        let message = signal.arguments[1].stringValue
                    else { continue }
                    continuation.yield((reason, message))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in forwarding.cancel() }
        }
    }
}

/// Device1's properties, typed; absent or mistyped values are nil (BlueZ omits RSSI when not advertising).
public struct DeviceProperties: Hashable, Sendable {
    public var address: String?
    public var addressType: String?
    public var name: String?
    public var alias: String?
    public var rssi: Int16?
    public var txPower: Int16?
    public var uuids: [String]
    /// Company identifier → bytes.
    public var manufacturerData: [UInt16: [UInt8]]
    public var connected: Bool
    public var servicesResolved: Bool
    public var paired: Bool
    public var bonded: Bool
    public var trusted: Bool
    public var adapter: DBusObjectPath?

    public init(_ properties: [String: DBusValue]) {
        address = properties["Address"]?.stringValue
        addressType = properties["AddressType"]?.stringValue
        name = properties["Name"]?.stringValue
        alias = properties["Alias"]?.stringValue
        rssi = properties["RSSI"]?.int16Value
        txPower = properties["TxPower"]?.int16Value
        uuids = properties["UUIDs"]?.stringsValue ?? []
        var data: [UInt16: [UInt8]] = [:]
        for entry in properties["ManufacturerData"]?.dictionaryEntries ?? [] {
            if let company = entry.key.uint16Value, let bytes = entry.value.unwrappingVariants.bytesValue {
                data[company] = bytes
            }
        }
        manufacturerData = data
        connected = properties["Connected"]?.boolValue ?? false
        servicesResolved = properties["ServicesResolved"]?.boolValue ?? false
        paired = properties["Paired"]?.boolValue ?? false
        bonded = properties["Bonded"]?.boolValue ?? false
        trusted = properties["Trusted"]?.boolValue ?? false
        adapter = properties["Adapter"]?.objectPathValue
    }
}
