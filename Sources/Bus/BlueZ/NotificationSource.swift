import DBus

/// Notifications of a characteristic, whichever way BlueZ delivers them: AcquireNotify (an fd, fast) first, and
/// StartNotify (Value PropertiesChanged over D-Bus) when AcquireNotify is refused. It remembers per device which
/// method worked, so later subscriptions go straight to it.
public actor NotificationSource {
    public enum Method: Hashable, Sendable {
        case acquireNotify
        case startNotify
    }

    /// An active subscription. `values` finishes when the link drops; ending it releases the subscription
    /// (closes the fd, or calls StopNotify).
    public struct Subscription: Sendable {
        public let method: Method
        /// The MTU AcquireNotify reported (nil for StartNotify: read `GattCharacteristic.mtu()`).
        public let mtu: Int?
        /// The notifications, in batches that arrived together.
        public let values: NotificationBatches
    }

    private var methods: [DBusObjectPath: Method] = [:]

    public init() {}

    /// The method that worked last for `device`, if any.
    public func method(for device: DBusObjectPath) -> Method? {
        methods[device]
    }

    /// Forgets what worked for `device` (e.g. after `RemoveDevice` or a firmware update).
    public func forget(_ device: DBusObjectPath) {
        methods[device] = nil
    }

    /// Subscribes to `characteristic` of `device`. With `allowingStartNotify` false only AcquireNotify is tried
    /// (whatever worked before) and its refusal is thrown as BlueZ gave it.
    ///
    /// A characteristic that only indicates (`GattService.Characteristic.indicatesOnly`: Blood Pressure, Temperature
    /// and Weight Measurement, RACP) goes straight to StartNotify: AcquireNotify hands out a socket for
    /// notifications only, while bluetoothd confirms each indication itself (gatt-api.txt, AcquireNotify and
    /// StartNotify). That choice is the characteristic's, not the device's, so it leaves the remembered method
    /// alone; `allowingStartNotify` does not apply to it.
    public func subscribe(
        to characteristic: GattCharacteristic, of device: DBusObjectPath,
        timeout: Duration = BlueZSession.defaultTimeout, allowingStartNotify: Bool = true, indicatesOnly: Bool = false
    ) async throws -> Subscription {
        if indicatesOnly {
            return Subscription(method: .startNotify, mtu: nil, values: try await characteristic.startNotify(timeout: timeout))
        }
        if methods[device] != .startNotify || !allowingStartNotify {
            do {
                let acquisition = try await characteristic.acquireNotify(timeout: timeout)
                methods[device] = .acquireNotify
                let values = NotificationBatches { continuation in
                    let forwarding = Task {
                        for await batch in acquisition.packets { continuation.yield(batch) }
                        continuation.finish()
                    }
                    // The acquisition lives as long as the stream; ending the stream closes the socket.
                    continuation.onTermination = { _ in
                        forwarding.cancel()
                        acquisition.close()
                    }
                }
                return Subscription(method: .acquireNotify, mtu: acquisition.mtu, values: values)
            } catch let error as BlueZError where allowingStartNotify && Self.fallsBack(error) {
                // Refused (older BlueZ, another client's StartNotify session, a stack without fd passing).
            }
        }
        let values = try await characteristic.startNotify(timeout: timeout)
        methods[device] = .startNotify
        return Subscription(method: .startNotify, mtu: nil, values: values)
    }

    /// Errors after which StartNotify is worth trying; anything else (timeout, not connected) is reported.
    static func fallsBack(_ error: BlueZError) -> Bool {
        switch error {
        case .notSupported, .notPermitted, .failed, .notAuthorized: true
        case .dbus(let error): error.code == .unknownMethod || error.code == .notSupported
        default: false
        }
    }
}
