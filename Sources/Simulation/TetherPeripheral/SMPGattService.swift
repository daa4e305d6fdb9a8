import DBus
import SMP

/// MCUmgr's SMP GATT service as objects of the peripheral's BlueZ GATT application (doc/gatt-api.txt; Zephyr "SMP
/// Transport Specification", "Bluetooth Low Energy (LE)"; smp_bt.c `SMP_BT_ATTRS`): one primary service with one
/// characteristic that takes requests as Write Without Response and sends responses as notifications. It sits beside
/// Tether's service under the same ObjectManager, so one RegisterApplication serves both.
struct SMPGattService: Sendable {
    let root: DBusObjectPath
    let requiresAuthentication: Bool

    var servicePath: DBusObjectPath { DBusObjectPath(root.rawValue + "/service1") }
    var characteristicPath: DBusObjectPath { DBusObjectPath(servicePath.rawValue + "/char0") }

    /// As Tether's own characteristics: with pairing required, only an authenticated encrypted link may write
    /// requests or read (BlueZ derives the CCCD's permissions from the read flag). Zephyr's smp_bt.c asks for
    /// encryption the same way with CONFIG_MCUMGR_TRANSPORT_BT_PERM_RW_AUTHEN.
    var flags: [String] {
        ["write-without-response", "notify"]
            + (requiresAuthentication ? ["encrypt-authenticated-write", "encrypt-authenticated-read"] : [])
    }

    func export(on connection: DBusConnection, link: SMPLink) async throws {
        try await connection.objectServer.export([
            DBusInterface(
                name: BlueZName.gattService,
                properties: [
                    DBusProperty("UUID", signature: "s") { .string(SMPBluetoothUUID.service) },
                    DBusProperty("Primary", signature: "b") { .bool(true) },
                ])
        ], at: servicePath)
        try await connection.objectServer.export([characteristic(link: link)], at: characteristicPath)
    }

    private func characteristic(link: SMPLink) -> DBusInterface {
        let flags = flags
        let servicePath = servicePath
        return DBusInterface(
            name: BlueZName.gattCharacteristic,
            methods: CharacteristicMethods.writeCommands(
                write: { bytes, mtu in await link.write(bytes, mtu: mtu) },
                acquire: { mtu in try await link.acquireWrite(mtu: mtu) })
                + CharacteristicMethods.notifications(
                    read: { await link.lastValue }, start: { await link.startNotify() }, stop: { await link.stopNotify() }),
            properties: [
                DBusProperty("UUID", signature: "s") { .string(SMPBluetoothUUID.characteristic) },
                DBusProperty("Service", signature: "o") { .objectPath(servicePath) },
                DBusProperty("Flags", signature: "as") { .strings(flags) },
                DBusProperty("Notifying", signature: "b") { .bool(await link.isNotifying) },
                DBusProperty("WriteAcquired", signature: "b") { .bool(await link.isWriteAcquired) },
                DBusProperty("Value", signature: "ay") { .bytes(await link.lastValue) },
            ])
    }
}
