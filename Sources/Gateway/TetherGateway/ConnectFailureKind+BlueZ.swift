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
    /// The supervisor's phase as the control API names it.
    init(_ phase: DevicePhase?) {
        switch phase {
        case nil, .waiting?: self = .idle
        case .backingOff?: self = .backoff
        case .connecting?: self = .connecting
        case .connected?: self = .connected
        case .clearing?: self = .removing
        case .disconnecting?: self = .disconnecting
        }
    }
}
