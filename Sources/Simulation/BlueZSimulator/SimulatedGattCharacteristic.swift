import DBus
import Foundation

/// A remote characteristic: `org.bluez.GattCharacteristic1` at `<service>/charXXXX`.
///
/// The behaviour lives in the owning `SimulatedDevice` (RX goes to the firmware model, TX carries its
/// notifications); this type is the declaration and the D-Bus surface.
struct SimulatedGattCharacteristic: Sendable {
    enum Role: Hashable, Sendable {
        /// Tether RX: writes go to the firmware model (write without response).
        case rx
        /// Tether TX: the firmware model's notifications.
        case tx
        /// Link Loss Alert Level: one byte, read and write with response.
        case alertLevel
        /// A read-only value.
        case fixed([UInt8])
    }

    let handle: UInt16
    let uuid: String
    let flags: [String]
    let role: Role
    let descriptors: [SimulatedGattDescriptor]

    var notifies: Bool { flags.contains("notify") || flags.contains("indicate") }
    var writesWithoutResponse: Bool { flags.contains("write-without-response") }

    func path(under service: DBusObjectPath) -> DBusObjectPath {
        DBusObjectPath(service.rawValue + String(format: "/char%04x", handle))
    }

    func interface(service: DBusObjectPath, path: DBusObjectPath, device: SimulatedDevice) -> DBusInterface {
        let role = role
        let uuid = uuid
        let flags = flags
        var properties = [
            DBusProperty("UUID", signature: "s") { .string(uuid) },
            DBusProperty("Service", signature: "o") { .objectPath(service) },
            DBusProperty("Flags", signature: "as") { .strings(flags) },
            DBusProperty("MTU", signature: "q") { .uint16(await device.mtu) },
            DBusProperty("Value", signature: "ay") { .bytes(await device.cachedValue(role)) },
        ]
        // BlueZ lists NotifyAcquired/Notifying only for notifying characteristics and WriteAcquired only for
        // write-without-response ones; bleak picks AcquireNotify by the presence of NotifyAcquired.
        if notifies {
            properties.append(DBusProperty("Notifying", signature: "b") { .bool(await device.isNotifying) })
            properties.append(
                DBusProperty("NotifyAcquired", signature: "b") { .bool(await device.isNotifyAcquired) })
        }
        if writesWithoutResponse {
            properties.append(DBusProperty("WriteAcquired", signature: "b") { .bool(await device.isWriteAcquired) })
        }
        let options = DBusArgument("options", "a{sv}")
        return DBusInterface(
            name: BlueZInterface.gattCharacteristic,
            methods: [
                DBusMethod("ReadValue", inputs: [options], outputs: [DBusArgument("value", "ay")]) { _ in
                    [.bytes(try await device.readValue(role, at: path))]
                },
                DBusMethod("WriteValue", inputs: [DBusArgument("value", "ay"), options]) { call in
                    let bytes = call.arguments[0].bytesValue ?? []
                    let type = call.arguments[1].variantDictionaryValue?["type"]?.stringValue
                    try await device.writeValue(role, bytes, type: type, flags: flags)
                    return []
                },
                DBusMethod("StartNotify") { call in
                    guard flags.contains("notify") else { throw BlueZError.notSupported }
                    try await device.startNotify(sender: call.sender)
                    return []
                },
                DBusMethod("StopNotify") { call in
                    guard flags.contains("notify") else { throw BlueZError.notSupported }
                    try await device.stopNotify(sender: call.sender)
                    return []
                },
                DBusMethod(
                    "AcquireNotify", inputs: [options],
                    outputs: [DBusArgument("fd", "h"), DBusArgument("mtu", "q")]
                ) { _ in
                    guard flags.contains("notify") else { throw BlueZError.notSupported }
                    let (fd, mtu) = try await device.acquireNotify()
                    return [.unixFD(fd), .uint16(mtu)]
                },
                DBusMethod(
                    "AcquireWrite", inputs: [options],
                    outputs: [DBusArgument("fd", "h"), DBusArgument("mtu", "q")]
                ) { _ in
                    guard flags.contains("write-without-response") else { throw BlueZError.notSupported }
                    let (fd, mtu) = try await device.acquireWrite()
                    return [.unixFD(fd), .uint16(mtu)]
                },
            ],
            properties: properties)
    }
}
