import LinkProtocol
import BlueZ
import DBus

/// One BLE connection's Tether link I/O, set up once the connection's services are resolved: Tether's service
/// found, TX subscribed (before anything is written: link protocol §2.2), RX writable.
struct DeviceLink: Sendable {
    let number: UInt64
    let method: GatewayDevice.NotifyMethod
    let mtu: Int
    /// The ATT notifications in batches that arrived together; finishes when the link drops. Ending its
    /// iteration releases the subscription (closes the AcquireNotify socket or calls StopNotify).
    let notifications: NotificationBatches
    let writer: LinkWriter

    /// Sets the Tether link up on a connection whose services are resolved, bounded by `link.timeout`.
    static func establish(_ link: PeripheralLink) async throws -> DeviceLink {
        let (number, device, session, source) = (link.number, link.device, link.session, link.notificationSource)
        let (preference, timeout) = (link.notifyPreference, link.timeout)
        guard let service = link.service(TetherGATT.service), let tx = service.characteristic(TetherGATT.tx)?.path,
            let rx = service.characteristic(TetherGATT.rx)?.path
        else {
            throw GatewayError.notPermitted("\(device.path) has no Tether GATT service with RX and TX (\(TetherGATT.service))")
        }
        let txCharacteristic = GattCharacteristic(session: session, path: tx)
        let rxCharacteristic = GattCharacteristic(session: session, path: rx)
        let method: GatewayDevice.NotifyMethod
        let notifications: NotificationBatches
        var mtu: Int?
        switch preference {
        case .startNotifyOnly:
            notifications = try await txCharacteristic.startNotify(timeout: timeout)
            method = .startNotify
        case .acquireFirst, .acquireOnly:
            let fallsBack = preference == .acquireFirst
            let subscription: NotificationSource.Subscription
            do {
                subscription = try await source.subscribe(
                    to: txCharacteristic, of: device.path, timeout: timeout, allowingStartNotify: fallsBack)
            } catch let error as BlueZError where !fallsBack {
                throw GatewayError.notPermitted(
                    "BlueZ refused AcquireNotify on TX (\(error)); AcquireNotify only, no StartNotify fallback")
            }
            notifications = subscription.values
            mtu = subscription.mtu
            method = subscription.method == .acquireNotify ? .acquireNotify : .startNotify
        }
        let (channel, writeMTU) = try await WriteWithoutResponse.open(rxCharacteristic, timeout: timeout)
        return DeviceLink(
            number: number, method: method, mtu: mtu ?? writeMTU, notifications: notifications, writer: LinkWriter(channel: channel))
    }
}
