import BlueZ
import DBus
import TetherStore

/// What runs on a connected peripheral for one kind of service: the Tether link session today, a health profile's
/// lanes and an SMP client next. The gateway's connection management (the supervisor driver, pairing and
/// re-bonding, scanning, the agent) connects the device, resolves and classifies its services
/// (`PeripheralClassifier`), and hands the resolved link to one session per kind; a session owns everything about
/// its kind's GATT I/O and storage from there.
///
/// A session lives across connections: `linkUp` for every connection, `linkDown` when it drops.
protocol PeripheralSession: AnyObject, Sendable {
    var kind: PeripheralKind { get }
    /// The device is connected and its services are resolved: set this kind's I/O up (subscribe before anything can
    /// arrive) within `link.timeout`. A throw abandons the link (the supervisor reconnects under its backoff): only
    /// a kind the device cannot do without throws.
    func linkUp(_ link: PeripheralLink) async throws
    /// The connection ended (or set-up was abandoned).
    func linkDown()
    /// Graceful shutdown, step 1: finish the work in flight (commits and their ACKs).
    func drain() async
    /// Ends the session once its queued inputs are handled.
    func finish()
}

/// One connection of a peripheral with its services resolved: everything a session needs to set its kind up.
struct PeripheralLink: Sendable {
    /// Increases with every connection the gateway sets up (any device), so a late input names its link.
    let number: UInt64
    let device: Device
    let session: BlueZSession
    let tree: BlueZObjectTree
    let notificationSource: NotificationSource
    /// The device's GATT services at connection time, in handle order.
    let services: [GattService]
    let notifyPreference: GatewayConfiguration.NotifyPreference
    let timeout: Duration

    /// The service with `uuid`, if the device offers it.
    func service(_ uuid: String) -> GattService? {
        guard let wanted = GattUUID.normalized(uuid) else { return nil }
        return services.first { $0.uuid == wanted }
    }

    /// The device's services once BlueZ has resolved them *and* the mirror has applied every GATT object: BlueZ
    /// adds the GATT objects before it sets ServicesResolved (doc/device-api.txt), and the mirror applies signals
    /// in order, so once the mirror itself shows ServicesResolved it holds the whole database. Bounded by `timeout`.
    static func resolvedServices(of device: Device, in tree: BlueZObjectTree, timeout: Duration) async throws -> [GattService] {
        try await device.waitUntilServicesResolved(timeout: timeout)
        let deadline = ContinuousClock.now + timeout
        while await tree.devices[device.path]?["ServicesResolved"]?.boolValue != true {
            guard ContinuousClock.now < deadline else {
                throw GatewayError.unavailable("\(device.path): BlueZ resolved its services but the mirror did not follow")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return await tree.services(of: device.path)
    }
}
