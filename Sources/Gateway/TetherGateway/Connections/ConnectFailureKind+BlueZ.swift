import BlueZ
import ConnectionSupervisor

extension ConnectFailureKind {
    /// Every BlueZ connect error mapped to what the supervisor's rules care about, here and nowhere else.
    ///
    /// - `InProgress`: BlueZ holds a half-open attempt for this device (rule 4: clear it first).
    /// - `Failed "le-connection-abort-by-local"` (and BlueZ's other abort wording): the controller gave up.
    /// - everything else, the driver's own timeout included, is `.other`.
    init(_ error: any Error) {
        switch error as? BlueZError {
        case .inProgress?:
            self = .inProgress
        case .failed(let reason)? where reason.contains("abort"):
            self = .abort
        case .connectionAttemptFailed?:
            self = .abort
        default:
            self = .other
        }
    }
}

extension GatewayDevice.State {
    /// A device's state as the control API names it, from the supervisor's phase and whether the device's link is
    /// up (set up, its notifications flowing): the one definition every view uses (`ListDevices`' `state`,
    /// `GetStatus`' `devices_connected`, the metrics). BlueZ's Connect alone is not a connected device: until the
    /// link is set up, and after it ended while BlueZ still reports the connection, the device is `connecting`.
    init(_ phase: DevicePhase?, linkIsUp: Bool) {
        switch phase {
        case nil, .waiting?: self = .idle
        case .backingOff?: self = .backoff
        case .connecting?: self = .connecting
        case .connected?: self = linkIsUp ? .connected : .connecting
        case .clearing?: self = .removing
        case .abandoning?, .disconnecting?: self = .disconnecting
        }
    }
}
