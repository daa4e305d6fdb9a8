import LinkProtocol
import BlueZ
import DBus

/// One BLE connection's I/O, set up after Connect succeeded: services resolved, Tether's service found, TX
/// subscribed (before anything is written: link protocol §2.2), RX writable.
struct DeviceLink: Sendable {
    let number: UInt64
    let method: GatewayDevice.NotifyMethod
    let mtu: Int
    /// The ATT notifications in batches that arrived together; finishes when the link drops. Ending its
    /// iteration releases the subscription (closes the AcquireNotify socket or calls StopNotify).
    let notifications: NotificationBatches
    let writer: LinkWriter

    /// Sets the link up, bounded by `timeout`.
    static func establish(
        number: UInt64, device: Device, session: BlueZSession, tree: BlueZObjectTree, source: NotificationSource,
        preference: GatewayConfiguration.NotifyPreference, timeout: Duration
    ) async throws -> DeviceLink {
        try await device.waitUntilServicesResolved(timeout: timeout)
        let (tx, rx) = try await characteristics(of: device.path, in: tree, timeout: timeout)
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
        let writer: LinkWriter
        do {
            let acquisition = try await rxCharacteristic.acquireWrite(timeout: timeout)
            writer = .socket(acquisition)
            mtu = mtu ?? acquisition.mtu
        } catch let error as BlueZError where Self.writeFallsBack(error) {
            let linkMTU = try await rxCharacteristic.mtu()
            mtu = mtu ?? linkMTU
            writer = .characteristic(
                rxCharacteristic, maximumValueLength: GattCharacteristic.maximumValueLength(mtu: linkMTU))
        }
        return DeviceLink(
            number: number, method: method, mtu: mtu ?? GattCharacteristic.minimumMTU, notifications: notifications,
            writer: writer)
    }

    /// AcquireWrite refused (older BlueZ, no fd passing): WriteValue works everywhere.
    static func writeFallsBack(_ error: BlueZError) -> Bool {
        switch error {
        case .notSupported, .notPermitted, .failed, .notAuthorized: true
        case .dbus(let error): error.code == .unknownMethod || error.code == .notSupported
        default: false
        }
    }

    /// TX and RX below `device`, waiting (bounded) for the mirror to apply the GATT InterfacesAdded that BlueZ sends
    /// before ServicesResolved: the wait above listened on its own subscription, so the mirror may lag a little.
    static func characteristics(of device: DBusObjectPath, in tree: BlueZObjectTree, timeout: Duration)
        async throws -> (tx: DBusObjectPath, rx: DBusObjectPath)
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let tx = await tree.characteristic(uuid: TetherGATT.tx, inService: TetherGATT.service, of: device),
                let rx = await tree.characteristic(uuid: TetherGATT.rx, inService: TetherGATT.service, of: device)
            {
                return (tx, rx)
            }
            guard ContinuousClock.now < deadline else {
                throw GatewayError.notPermitted("\(device) has no Tether GATT service (\(TetherGATT.service))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
