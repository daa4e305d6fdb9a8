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
        /// A standard health characteristic (16-bit SIG UUID), served by the device's HealthDevice model.
        case health(UInt16)
        /// The MCUmgr SMP characteristic (write without response + notify), served by the SMP device model.
        case smp
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
        // write-without-response ones; bleak picks AcquireNotify by the presence of NotifyAcquired. For a health
        // characteristic NotifyAcquired exists only with the notify property (BlueZ src/gatt-client.c,
        // characteristic_notify_acquired_exists): an indicate-only one is reached through StartNotify.
        if notifies {
            properties.append(DBusProperty("Notifying", signature: "b") { .bool(await device.isNotifying(role)) })
            if case .health = role, !flags.contains("notify") {
            } else {
                properties.append(
                    DBusProperty("NotifyAcquired", signature: "b") { .bool(await device.isNotifyAcquired(role)) })
            }
        }
        if writesWithoutResponse {
            properties.append(DBusProperty("WriteAcquired", signature: "b") { .bool(await device.isWriteAcquired(role)) })
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
                // BlueZ's StartNotify serves notify and indicate alike (it writes the CCCD bit the properties allow).
                DBusMethod("StartNotify") { call in
                    guard flags.contains("notify") || flags.contains("indicate") else { throw BlueZError.notSupported }
                    if case .health(let uuid) = role {
                        try await device.healthSubscribeFault(uuid)
                        try await device.startHealthNotify(uuid, sender: call.sender)
                    } else if role == .smp {
                        try await device.startSMPNotify(sender: call.sender)
                    } else {
                        try await device.startNotify(sender: call.sender)
                    }
                    return []
                },
                DBusMethod("StopNotify") { call in
                    guard flags.contains("notify") || flags.contains("indicate") else { throw BlueZError.notSupported }
                    if case .health(let uuid) = role {
                        try await device.stopHealthNotify(uuid, sender: call.sender)
                    } else if role == .smp {
                        try await device.stopSMPNotify(sender: call.sender)
                    } else {
                        try await device.stopNotify(sender: call.sender)
                    }
                    return []
                },
                DBusMethod(
                    "AcquireNotify", inputs: [options],
                    outputs: [DBusArgument("fd", "h"), DBusArgument("mtu", "q")]
                ) { _ in
                    guard flags.contains("notify") else { throw BlueZError.notSupported }
                    if case .health(let uuid) = role {
                        try await device.healthSubscribeFault(uuid)
                        let (fd, mtu) = try await device.acquireHealthNotify(uuid)
                        return [.unixFD(fd), .uint16(mtu)]
                    }
                    let (fd, mtu) = role == .smp ? try await device.acquireSMPNotify() : try await device.acquireNotify()
                    return [.unixFD(fd), .uint16(mtu)]
                },
                DBusMethod(
                    "AcquireWrite", inputs: [options],
                    outputs: [DBusArgument("fd", "h"), DBusArgument("mtu", "q")]
                ) { _ in
                    guard flags.contains("write-without-response") else { throw BlueZError.notSupported }
                    let (fd, mtu) = role == .smp ? try await device.acquireSMPWrite() : try await device.acquireWrite()
                    return [.unixFD(fd), .uint16(mtu)]
                },
            ],
            properties: properties)
    }
}
