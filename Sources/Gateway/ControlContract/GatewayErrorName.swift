/// control-api.md, Errors: the names after `io.tether.Gateway1.Error.`.
public enum GatewayErrorName: Sendable, Hashable {
    case unknownDevice, unknownSample, invalidArgument, notPermitted, busy, pairingFailed, promptCanceled, storageFailed, unavailable
    /// A firmware image that does not verify against tetherd's trusted keys: nothing was sent.
    case imageRefused
    /// A name added to the contract after this client was built.
    case unknown(String)

    public init?(rawValue: String) {
        switch rawValue {
        case "UnknownDevice": self = .unknownDevice
        case "UnknownSample": self = .unknownSample
        case "InvalidArgument": self = .invalidArgument
        case "NotPermitted": self = .notPermitted
        case "Busy": self = .busy
        case "PairingFailed": self = .pairingFailed
        case "PromptCanceled": self = .promptCanceled
        case "StorageFailed": self = .storageFailed
        case "Unavailable": self = .unavailable
        case "ImageRefused": self = .imageRefused
        default: return nil
        }
    }

    public var rawValue: String {
        switch self {
        case .unknownDevice: "UnknownDevice"
        case .unknownSample: "UnknownSample"
        case .invalidArgument: "InvalidArgument"
        case .notPermitted: "NotPermitted"
        case .busy: "Busy"
        case .pairingFailed: "PairingFailed"
        case .promptCanceled: "PromptCanceled"
        case .storageFailed: "StorageFailed"
        case .unavailable: "Unavailable"
        case .imageRefused: "ImageRefused"
        case .unknown(let name): name
        }
    }
}
