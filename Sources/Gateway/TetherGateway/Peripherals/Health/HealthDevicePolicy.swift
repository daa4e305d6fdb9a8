/// A per-device opt-in by identity address, for what the cold lane does to a device's memory only when someone
/// decided so for that device: deleting the records the backend acknowledged (tetherd's
/// `[health] delete_acknowledged_records`, RecordTransfer rule 7) and looking for records that vanished from it
/// (`audit_vanished_records`, rule 8). Off by default, and an explicit list of addresses, never "all": a meter paired
/// later is not opted in by a policy written before it existed.
public struct HealthDevicePolicy: Hashable, Sendable {
    /// Identity addresses, upper case (`C0:54:45:00:00:03`).
    public private(set) var addresses: Set<String>

    public init(addresses: some Sequence<String> = []) {
        self.addresses = Set(addresses.map { $0.uppercased() })
    }

    /// No device: the default.
    public static let off = HealthDevicePolicy()

    public func allows(_ address: String) -> Bool { addresses.contains(address.uppercased()) }
}
