import BlueZ
import Crypto
import DBus
import SMP

/// The update procedure's transport over BLE: an SMPBluetoothSession on the device's current connection, opened
/// again on each new one. The caller connects the device first; this reconnects it when its link drops.
///
///  1. After a reset the device comes back as a new connection: Zephyr's os_mgmt answers the reset and reboots
///     after, so the link drops (at the central, a supervision time-out); the session is closed, the transport
///     waits for `Connected=false` (BlueZ's Device1), connects again with Device1.Connect, waits for the services to
///     resolve (doc/device-api.txt: ServicesResolved), opens a new session and reads the state.
///  2. A link lost during an upload is connected again the same way, at most `uploadReconnects` times, and the
///     upload goes on from the device's offset (ImageUploader rule 5: offset 0 with the same `sha` is answered with
///     the offset the device holds).
public final class FirmwareBluetoothTransport: FirmwareUpdateTransport {
    public let bluez: BlueZSession
    public let device: Device
    public let settings: SMPBluetoothSession.Settings
    public var uploadReconnects = 3
    /// Each Device1.Connect attempt's bound.
    public var connectTimeout: Duration = .seconds(30)
    private var current: SMPBluetoothSession?
    /// A reset was answered: the link is about to drop (rule 1).
    private var rebootPending = false

    /// `session`: one already opened on the device's current connection, if the caller has it.
    public init(
        bluez: BlueZSession, device: DBusObjectPath, settings: SMPBluetoothSession.Settings = .init(), session: SMPBluetoothSession? = nil
    ) {
        self.bluez = bluez
        self.device = Device(session: bluez, path: device)
        self.settings = settings
        current = session
    }

    /// The session on the current connection, opened when there is none.
    public func session() async throws(FirmwareTransportError) -> SMPBluetoothSession {
        if let current { return current }
        let opened = try await SMPBluetoothSession.open(bluez: bluez, device: device.path, settings: settings)
        current = opened
        return opened
    }

    public func imageState() async throws(FirmwareTransportError) -> SMPImageState { try await session().imageState() }

    public func test(hash: [UInt8]) async throws(FirmwareTransportError) -> SMPImageState { try await session().test(hash: hash) }

    public func confirm() async throws(FirmwareTransportError) -> SMPImageState { try await session().confirm(hash: nil) }

    public func reset() async throws(FirmwareTransportError) {
        try await session().reset()
        rebootPending = true
    }

    /// Rule 2.
    public func upload(_ image: [UInt8], configuration: ImageUploader.Configuration, observe: (UploadOrder) -> Void)
        async throws(FirmwareTransportError)
    {
        var uploader = ImageUploader(
            image: image, sha256: Array(SHA256.hash(data: image)), configuration: try await session().uploaderConfiguration(configuration))
        var reconnectsLeft = uploadReconnects
        while true {
            do {
                return try await session().drive(&uploader, observe: observe)
            } catch .client(.connectionLost) where reconnectsLeft > 0 {
                reconnectsLeft -= 1
                try await reconnect(within: connectTimeout)
            }
        }
    }

    /// Rule 1; and, after the proving wait (FirmwareUpdateProcedure rule 5), a state read on the connection that is
    /// up, connecting again only when it dropped (a device that crashed and rebooted meanwhile).
    public func awaitDevice(within limit: Duration) async throws(FirmwareTransportError) -> SMPImageState? {
        let deadline = ContinuousClock.now + limit
        while true {
            if rebootPending || current == nil {
                do {
                    try await reconnect(within: ContinuousClock.now.duration(to: deadline), waitingForTheDrop: rebootPending)
                } catch {
                    return nil
                }
                rebootPending = false
            }
            do {
                return try await session().imageState()
            } catch .client(.timedOut), .client(.connectionLost) {
                guard ContinuousClock.now < deadline else { return nil }
                current?.close()
                current = nil
            }
        }
    }

    /// Closes the session, waits for the link to drop when told to (after a reset), then connects again and opens a
    /// new session, retrying until `limit` has passed. The wait for the drop is bounded by the longest supervision
    /// time-out (32 s, Core v5.3 Vol 6 Part B §4.5.2): a device that has not dropped the link by then is still
    /// connected, and Connect says so.
    public func reconnect(within limit: Duration, waitingForTheDrop: Bool = false) async throws(FirmwareTransportError) {
        let deadline = ContinuousClock.now + limit
        current?.close()
        current = nil
        // Until the link drops, the device may still be the old image, about to reboot (Zephyr answers the reset and
        // reboots after): a state read then would report the old image as running.
        if waitingForTheDrop { try? await device.waitUntil(connected: false, timeout: min(limit, .seconds(32))) }
        var lastError = FirmwareTransportError.transport("\(device.path) did not connect within \(limit)")
        repeat {
            do {
                try await device.connect(timeout: min(connectTimeout, max(ContinuousClock.now.duration(to: deadline), .seconds(1))))
                _ = try await session()
                return
            } catch let error as FirmwareTransportError {
                lastError = error
            } catch {
                lastError = .transport("connecting \(device.path): \(error)")
            }
            try? await Task.sleep(for: .milliseconds(200))
        } while ContinuousClock.now < deadline
        throw lastError
    }
}
