import LinkProtocol
import DBus
import Foundation

/// Tether's GATT service as a BlueZ GATT application (doc/gatt-api.txt, "GATT Manager hierarchy"): an
/// ObjectManager at `root` listing one GattService1 with the RX and TX GattCharacteristic1 objects below it,
/// registered with `GattManager1.RegisterApplication` on the adapter.
struct GattApplication: Sendable {
    let root: DBusObjectPath
    let requiresAuthentication: Bool

    var servicePath: DBusObjectPath { DBusObjectPath(root.rawValue + "/service0") }
    var rxPath: DBusObjectPath { DBusObjectPath(servicePath.rawValue + "/char0") }
    var txPath: DBusObjectPath { DBusObjectPath(servicePath.rawValue + "/char1") }

    /// Flags as gatt-api.txt spells them. With pairing required, RX accepts writes only on an authenticated
    /// (MITM) encrypted link and TX reads likewise; BlueZ derives the CCCD's permissions from them.
    var rxFlags: [String] { ["write-without-response"] + (requiresAuthentication ? ["encrypt-authenticated-write"] : []) }
    var txFlags: [String] { ["notify"] + (requiresAuthentication ? ["encrypt-authenticated-read"] : []) }

    /// Exports the objects (the ObjectManager first, so GetManagedObjects sees everything once registered).
    func export(on connection: DBusConnection, link: DeviceLink) async throws {
        try connection.objectServer.addObjectManager(at: root)
        let servicePath = servicePath
        try await connection.objectServer.export([
            DBusInterface(
                name: BlueZName.gattService,
                properties: [
                    DBusProperty("UUID", signature: "s") { .string(TetherGATT.service) },
                    DBusProperty("Primary", signature: "b") { .bool(true) },
                ])
        ], at: servicePath)
        try await connection.objectServer.export([rxInterface(link: link)], at: rxPath)
        try await connection.objectServer.export([txInterface(link: link)], at: txPath)
    }

    func unexport(from connection: DBusConnection) {
        connection.objectServer.unexport(txPath)
        connection.objectServer.unexport(rxPath)
        connection.objectServer.unexport(servicePath)
        connection.objectServer.removeObjectManager(at: root)
    }

    /// real-bluez-vm.md, pitfall 8: `Service` must be an object path (type `o`) or RegisterApplication fails.
    private func rxInterface(link: DeviceLink) -> DBusInterface {
        let flags = rxFlags
        let servicePath = servicePath
        return DBusInterface(
            name: BlueZName.gattCharacteristic,
            methods: CharacteristicMethods.writeCommands(
                write: { bytes, mtu in await link.write(bytes, mtu: mtu) },
                acquire: { mtu in try await link.acquireWrite(mtu: mtu) }),
            properties: [
                DBusProperty("UUID", signature: "s") { .string(TetherGATT.rx) },
                DBusProperty("Service", signature: "o") { .objectPath(servicePath) },
                DBusProperty("Flags", signature: "as") { .strings(flags) },
                DBusProperty("WriteAcquired", signature: "b") { .bool(await link.isWriteAcquired) },
            ])
    }

    /// TX: BlueZ calls StartNotify when the central enables the CCCD and turns each `Value` PropertiesChanged
    /// into one ATT notification. No `NotifyAcquired` property, so BlueZ never asks for AcquireNotify here.
    private func txInterface(link: DeviceLink) -> DBusInterface {
        let flags = txFlags
        let servicePath = servicePath
        return DBusInterface(
            name: BlueZName.gattCharacteristic,
            methods: CharacteristicMethods.notifications(
                read: { await link.lastValue }, start: { await link.startNotify() }, stop: { await link.stopNotify() }),
            properties: [
                DBusProperty("UUID", signature: "s") { .string(TetherGATT.tx) },
                DBusProperty("Service", signature: "o") { .objectPath(servicePath) },
                DBusProperty("Flags", signature: "as") { .strings(flags) },
                DBusProperty("Notifying", signature: "b") { .bool(await link.isNotifying) },
                DBusProperty("Value", signature: "ay") { .bytes(await link.lastValue) },
            ])
    }
}
