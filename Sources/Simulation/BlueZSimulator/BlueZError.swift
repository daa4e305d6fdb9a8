import DBus
import Foundation

/// The `org.bluez.Error.*` replies the simulator sends, in one place.
enum BlueZError {
    static func failed(_ message: String) -> DBusError { error("Failed", message) }
    static let inProgress = error("InProgress", "In Progress")
    /// bleak tells read from write refusals by BlueZ's messages "Read not permitted" / "Write not permitted".
    static func notPermitted(_ message: String) -> DBusError { error("NotPermitted", message) }
    static let notSupported = error("NotSupported", "Operation is not supported")
    static let notReady = error("NotReady", "Resource Not Ready")
    static let notConnected = error("NotConnected", "Not Connected")
    static let doesNotExist = error("DoesNotExist", "Does Not Exist")
    static let alreadyExists = error("AlreadyExists", "Already Exists")
    static let invalidArguments = error("InvalidArguments", "Invalid arguments in method call")
    static let authenticationFailed = error("AuthenticationFailed", "Authentication Failed")
    static let authenticationRejected = error("AuthenticationRejected", "Authentication Rejected")
    static let authenticationCanceled = error("AuthenticationCanceled", "Authentication Canceled")
    static let connectionAbort = failed("le-connection-abort-by-local")

    /// A bonded device that forgot its keys: the kernel's missing-key failure as bluetoothd reports it to Connect
    /// (src/error.h ERR_LE_CONN_KEY_MISSING in the BlueZ versions that define it).
    static let keyMissing = failed("le-connection-key-missing")

    /// An ATT error from the remote device as bluetoothd maps it (src/gatt-client.c, create_gatt_dbus_error).
    static func att(_ code: UInt8) -> DBusError {
        switch code {
        case 0x02: notPermitted("Read not permitted")
        case 0x03: notPermitted("Write not permitted")
        case 0x05, 0x0F, 0x0C: notPermitted("Not paired")
        case 0x07: error("InvalidArguments", "Invalid offset")
        case 0x0D: error("InvalidArguments", "Invalid Length")
        case 0x08: error("NotAuthorized", "Operation Not Authorized")
        case 0x06: notSupported
        default: failed(String(format: "Operation failed with ATT error: 0x%02x", code))
        }
    }

    static func error(_ suffix: String, _ message: String) -> DBusError {
        DBusError(name: "org.bluez.Error." + suffix, message: message)
    }
}

/// BlueZ's interface names.
enum BlueZInterface {
    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let gattService = "org.bluez.GattService1"
    static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    static let gattDescriptor = "org.bluez.GattDescriptor1"
    static let agentManager = "org.bluez.AgentManager1"
    static let agent = "org.bluez.Agent1"
}
