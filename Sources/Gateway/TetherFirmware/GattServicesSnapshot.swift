import BlueZ
import DBus

/// A device's GATT services read once, for a caller that keeps no mirror of BlueZ's object tree (the SMP session
/// opened by a command, or again after a reconnection): a `BlueZObjectTree` runs until its first snapshot
/// (GetManagedObjects, after subscribing) and is stopped. tetherd, which keeps a mirror, passes its services instead.
enum GattServicesSnapshot {
    /// The services of `device` once BlueZ says they are resolved (BlueZ exports the GATT objects before it sets
    /// ServicesResolved, doc/device-api.txt), bounded by `timeout`.
    static func read(_ device: Device, session: BlueZSession, timeout: Duration) async throws -> [GattService] {
        try await device.waitUntilServicesResolved(timeout: timeout)
        let tree = BlueZObjectTree(session: session)
        let events = await tree.events()
        let running = Task { try await tree.run() }
        defer { running.cancel() }
        let synchronized = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events {
                    if case .synchronized = event { return true }
                }
                return false
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        guard synchronized else { throw BlueZError.timeout }
        return await tree.services(of: device.path)
    }
}
