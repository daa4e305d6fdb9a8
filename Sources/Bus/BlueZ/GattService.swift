import DBus

/// `org.bluez.GattService1` (doc/gatt-api.txt): a remote service as BlueZ exports it once ServicesResolved is true,
/// e.g. `.../dev_XX/service0010`, read from the object-tree mirror with its characteristics.
///
/// Characteristic lookups are scoped to a service because the same characteristic UUID can live in several: the
/// Record Access Control Point (0x2A52) belongs to both the Glucose and the CGM service, and a device may carry both.
public struct GattService: Hashable, Sendable {
    /// One characteristic of the service as the mirror holds it.
    public struct Characteristic: Hashable, Sendable {
        public let path: DBusObjectPath
        /// 128-bit, lowercase.
        public let uuid: String
        /// BlueZ's `Flags`: "read", "write-without-response", "notify", "indicate", ...
        public let flags: Set<String>

        /// Values arrive by notification or indication; both come through StartNotify, and BlueZ confirms each
        /// indication itself (gatt-api.txt, StartNotify), so the gateway handles the two the same way.
        public var canSubscribe: Bool { flags.contains("notify") || flags.contains("indicate") }
        /// Indications only: AcquireNotify serves notifications, so such a characteristic is read with StartNotify.
        public var indicatesOnly: Bool { flags.contains("indicate") && !flags.contains("notify") }

        public init(path: DBusObjectPath, uuid: String, flags: Set<String>) {
            self.path = path
            self.uuid = uuid
            self.flags = flags
        }
    }

    public let path: DBusObjectPath
    /// 128-bit, lowercase.
    public let uuid: String
    public let isPrimary: Bool
    /// The Device1 object the service belongs to.
    public let device: DBusObjectPath
    /// In handle order (BlueZ names objects by handle, so path order is handle order).
    public let characteristics: [Characteristic]

    public init(
        path: DBusObjectPath, uuid: String, isPrimary: Bool, device: DBusObjectPath, characteristics: [Characteristic]
    ) {
        self.path = path
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.device = device
        self.characteristics = characteristics
    }

    /// The characteristic with `uuid` in this service (any spelling `GattUUID` accepts), if it has one.
    public func characteristic(_ uuid: String) -> Characteristic? {
        guard let wanted = GattUUID.normalized(uuid) else { return nil }
        return characteristics.first { $0.uuid == wanted }
    }

    /// The 16-bit SIG number of the service (`0x1810` Blood Pressure), nil for a vendor service.
    public var assignedNumber: UInt16? { GattUUID.assignedNumber(uuid) }

    /// The services below `device` in a mirror snapshot, in handle order. A characteristic belongs to the service
    /// its `Service` property names (falling back to the parent path, which BlueZ also uses).
    static func services(of device: DBusObjectPath, in objects: [DBusObjectPath: BlueZObjectTree.Interfaces]) -> [GattService] {
        var characteristicsByService: [DBusObjectPath: [Characteristic]] = [:]
        for (path, interfaces) in objects where device.isAncestor(of: path) {
            guard let properties = interfaces[BlueZInterfaceName.gattCharacteristic],
                let uuid = properties["UUID"]?.stringValue.flatMap(GattUUID.normalized),
                let service = properties["Service"]?.objectPathValue ?? path.parent
            else { continue }
            let flags = Set(properties["Flags"]?.stringsValue ?? [])
            characteristicsByService[service, default: []].append(Characteristic(path: path, uuid: uuid, flags: flags))
        }
        return objects.keys.sorted().compactMap { path in
            guard device.isAncestor(of: path), let properties = objects[path]?[BlueZInterfaceName.gattService],
                let uuid = properties["UUID"]?.stringValue.flatMap(GattUUID.normalized)
            else { return nil }
            return GattService(
                path: path, uuid: uuid, isPrimary: properties["Primary"]?.boolValue ?? true, device: device,
                characteristics: (characteristicsByService[path] ?? []).sorted { $0.path < $1.path })
        }
    }
}
