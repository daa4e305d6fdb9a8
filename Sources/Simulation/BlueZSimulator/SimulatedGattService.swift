import LinkProtocol
import DBus
import Foundation

/// A remote GATT service as BlueZ exports it after discovery: `org.bluez.GattService1` at
/// `<device>/serviceXXXX` (XXXX = declaration handle in lowercase hex), with its characteristics below it.
struct SimulatedGattService: Sendable {
    let handle: UInt16
    let uuid: String
    let primary: Bool
    let characteristics: [SimulatedGattCharacteristic]

    func path(under device: DBusObjectPath) -> DBusObjectPath {
        DBusObjectPath(device.rawValue + String(format: "/service%04x", handle))
    }

    /// GattService1 {UUID s, Device o, Primary b, Includes ao}.
    func interface(device: DBusObjectPath) -> DBusInterface {
        let uuid = uuid
        let primary = primary
        return DBusInterface(
            name: BlueZInterface.gattService,
            properties: [
                DBusProperty("UUID", signature: "s") { .string(uuid) },
                DBusProperty("Device", signature: "o") { .objectPath(device) },
                DBusProperty("Primary", signature: "b") { .bool(primary) },
                DBusProperty("Includes", signature: "ao") { .objectPaths([]) },
            ])
    }
}

/// The GATT database of a simulated Tether device (handles fixed, like a real firmware build).
enum TetherGattLayout {
    static let tetherService = TetherGATT.service
    static let rxCharacteristic = TetherGATT.rx
    static let txCharacteristic = TetherGATT.tx
    static let deviceInformationService = "0000180a-0000-1000-8000-00805f9b34fb"
    static let linkLossService = "00001803-0000-1000-8000-00805f9b34fb"
    static let cccd = "00002902-0000-1000-8000-00805f9b34fb"
    static let userDescription = "00002901-0000-1000-8000-00805f9b34fb"

    static func sig(_ short: UInt16) -> String {
        String(format: "0000%04x-0000-1000-8000-00805f9b34fb", short)
    }

    /// Link protocol §2: the Tether service (RX write-without-response, TX notify with its CCCD); Device
    /// Information (readable strings); Link Loss with its read/write Alert Level (for write-with-response tests).
    static func services(manufacturer: String, model: String, serial: String, firmware: String)
        -> [SimulatedGattService]
    {
        [
            SimulatedGattService(
                handle: 0x0010, uuid: tetherService, primary: true,
                characteristics: [
                    SimulatedGattCharacteristic(
                        handle: 0x0011, uuid: rxCharacteristic, flags: ["write-without-response"], role: .rx,
                        descriptors: []),
                    SimulatedGattCharacteristic(
                        handle: 0x0013, uuid: txCharacteristic, flags: ["notify"], role: .tx,
                        descriptors: [
                            SimulatedGattDescriptor(handle: 0x0015, uuid: cccd, role: .clientConfiguration),
                            SimulatedGattDescriptor(
                                handle: 0x0016, uuid: userDescription, role: .fixed(Array("Tether TX".utf8))),
                        ]),
                ]),
            SimulatedGattService(
                handle: 0x0020, uuid: deviceInformationService, primary: true,
                characteristics: [
                    fixed(0x0021, sig(0x2A29), manufacturer),
                    fixed(0x0023, sig(0x2A24), model),
                    fixed(0x0025, sig(0x2A25), serial),
                    fixed(0x0027, sig(0x2A26), firmware),
                ]),
            SimulatedGattService(
                handle: 0x0030, uuid: linkLossService, primary: true,
                characteristics: [
                    SimulatedGattCharacteristic(
                        handle: 0x0031, uuid: sig(0x2A06), flags: ["read", "write"], role: .alertLevel,
                        descriptors: [])
                ]),
        ]
    }

    private static func fixed(_ handle: UInt16, _ uuid: String, _ text: String) -> SimulatedGattCharacteristic {
        SimulatedGattCharacteristic(
            handle: handle, uuid: uuid, flags: ["read"], role: .fixed(Array(text.utf8)), descriptors: [])
    }
}
