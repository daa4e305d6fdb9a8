import DBus
import Foundation

/// A remote descriptor: `org.bluez.GattDescriptor1` at `<characteristic>/descXXXX`.
struct SimulatedGattDescriptor: Sendable {
    enum Role: Hashable, Sendable {
        /// 0x2902: readable (reflects notification state); a direct write is `NotPermitted`, as in BlueZ, which
        /// owns the CCCD and writes it for StartNotify/AcquireNotify.
        case clientConfiguration
        /// The CCCD of a health characteristic: reads 01 00 (notifications) or 02 00 (indications) while enabled.
        case healthClientConfiguration(UInt16)
        /// The CCCD of the MCUmgr SMP characteristic: 01 00 while a client receives its notifications.
        case smpClientConfiguration
        case fixed([UInt8])
    }

    let handle: UInt16
    let uuid: String
    let role: Role

    func path(under characteristic: DBusObjectPath) -> DBusObjectPath {
        DBusObjectPath(characteristic.rawValue + String(format: "/desc%04x", handle))
    }

    func interface(characteristic: DBusObjectPath, device: SimulatedDevice) -> DBusInterface {
        let role = role
        let uuid = uuid
        let options = DBusArgument("options", "a{sv}")
        return DBusInterface(
            name: BlueZInterface.gattDescriptor,
            methods: [
                DBusMethod("ReadValue", inputs: [options], outputs: [DBusArgument("value", "ay")]) { _ in
                    [.bytes(try await device.readDescriptor(role))]
                },
                DBusMethod("WriteValue", inputs: [DBusArgument("value", "ay"), options]) { _ in
                    switch role {
                    case .clientConfiguration, .healthClientConfiguration, .smpClientConfiguration, .fixed:
                        throw BlueZError.notPermitted("Write not permitted")
                    }
                },
            ],
            properties: [
                DBusProperty("UUID", signature: "s") { .string(uuid) },
                DBusProperty("Characteristic", signature: "o") { .objectPath(characteristic) },
                DBusProperty("Value", signature: "ay") { .bytes(await device.descriptorValue(role)) },
            ])
    }
}
