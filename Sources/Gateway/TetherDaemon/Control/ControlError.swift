import ControlContract
import DBus
import TetherStore

/// The control API's errors (docs/specs/control-api.md, "Errors"): `io.tether.Gateway1.Error.<Name>`, with a message
/// that says what went wrong and what to do; the CLI prints it as is.
enum ControlError {
    static let prefix = GatewayContract.errorPrefix

    static func unknownDevice(_ identifier: String) -> DBusError {
        DBusError(name: prefix + GatewayErrorName.unknownDevice.rawValue, message: "No device with serial or address \"\(identifier)\"; `tether devices` lists the known ones")
    }
    static func unknownSample(_ uid: String) -> DBusError {
        DBusError(name: prefix + GatewayErrorName.unknownSample.rawValue, message: "No health sample \"\(uid)\"; `tether health samples DEVICE` lists them with their uid")
    }
    static func invalidArgument(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.invalidArgument.rawValue, message: message) }
    static func notPermitted(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.notPermitted.rawValue, message: message) }
    static func busy(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.busy.rawValue, message: message) }
    static func pairingFailed(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.pairingFailed.rawValue, message: message) }
    static func promptCanceled(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.promptCanceled.rawValue, message: message) }
    static func storageFailed(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.storageFailed.rawValue, message: message) }
    static func imageRefused(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.imageRefused.rawValue, message: message) }
    static func unavailable(_ message: String) -> DBusError { DBusError(name: prefix + GatewayErrorName.unavailable.rawValue, message: message) }

    /// The one mapping from store errors to control errors.
    static func from(_ error: StoreError) -> DBusError {
        switch error.code {
        case .notFound: notPermitted(error.reason)
        case .invalidRequest: notPermitted(error.reason)
        case .conflict: busy(error.reason)
        case .databaseCapReached, .diskFloorReached, .diskFull:
            storageFailed("The gateway's storage is full (\(error.reason)); free disk space or raise [storage] limits")
        case .ioError, .readOnly, .corrupt, .busy, .constraint, .leaseLost, .other:
            storageFailed("The store could not complete the operation: \(error.reason)")
        }
    }
}
