/// Why a gateway operation failed; one case per control-API error name (docs/specs/control-api.md "Errors"), so the
/// daemon maps them one to one. The message says what went wrong and what to do.
public enum GatewayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `UnknownDevice`: no device with that serial or address.
    case unknownDevice(String)
    /// `InvalidArgument`: malformed input; the message names it.
    case invalidArgument(String)
    /// `NotPermitted`: the operation does not apply in the current state.
    case notPermitted(String)
    /// `Busy`: another pairing or scan holds the resource.
    case busy(String)
    /// `PairingFailed`: BlueZ refused; the message carries BlueZ's reason.
    case pairingFailed(String)
    /// `PromptCanceled`: the pairing prompt was not answered in time or was canceled.
    case promptCanceled
    /// `StorageFailed`: the store could not commit.
    case storageFailed(String)
    /// `Unavailable`: BlueZ (or the adapter) is not reachable right now.
    case unavailable(String)

    /// The control API's error name suffix (`io.tether.Gateway1.Error.<name>`).
    public var name: String {
        switch self {
        case .unknownDevice: "UnknownDevice"
        case .invalidArgument: "InvalidArgument"
        case .notPermitted: "NotPermitted"
        case .busy: "Busy"
        case .pairingFailed: "PairingFailed"
        case .promptCanceled: "PromptCanceled"
        case .storageFailed: "StorageFailed"
        case .unavailable: "Unavailable"
        }
    }

    public var description: String {
        switch self {
        case .unknownDevice(let what): "No device with serial or address '\(what)'."
        case .invalidArgument(let message), .notPermitted(let message), .busy(let message): message
        case .pairingFailed(let reason): "Pairing failed: \(reason)"
        case .promptCanceled: "The pairing prompt was not answered in time or was canceled."
        case .storageFailed(let reason): "The store could not commit: \(reason)"
        case .unavailable(let reason): "BlueZ is not available: \(reason)"
        }
    }
}
