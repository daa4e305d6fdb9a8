import DBus
import HealthDeviceModel
import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherPrimitives

extension SimulatedDevice {
    // MARK: - Device1 properties

    fileprivate func snapshot() -> Device1Snapshot {
        Device1Snapshot(
            rssi: rssi, txPower: txPower, connected: isConnected, servicesResolved: servicesResolved,
            paired: isPaired, trusted: trusted, blocked: blocked)
    }

    func setTrusted(_ value: Bool) {
        guard trusted != value else { return }
        trusted = value
        emit(["Trusted": .bool(value)])
    }

    func setBlocked(_ value: Bool) async {
        guard blocked != value else { return }
        blocked = value
        emit(["Blocked": .bool(value)])
        if value, isConnected { await dropLink(reason: ("org.bluez.Reason.Local", "Connection terminated by local host")) }
    }
}

private struct Device1Snapshot: Sendable {
    var rssi: Int16?
    var txPower: Int16?
    var connected: Bool
    var servicesResolved: Bool
    var paired: Bool
    var trusted: Bool
    var blocked: Bool
}

private struct PropertyUnavailable: Error {}

extension SimulatedDevice {
    /// org.bluez.Device1 with the properties of bluez-dbus-facts.md; RSSI/TxPower only while advertising.
    nonisolated func device1Interface() -> DBusInterface {
        let configuration = configuration
        let adapterPath = DBusObjectPath(path.rawValue.components(separatedBy: "/dev_")[0])
        let manufacturerData = DBusValue.dictionary(
            keySignature: "q", valueSignature: "v",
            configuration.manufacturerData.compactMap { key, bytes -> (UInt16, [UInt8])? in
                UInt16(key).map { ($0, bytes) }
            }.sorted { $0.0 < $1.0 }.map { DBusDictionaryEntry(key: .uint16($0.0), value: .variant(.bytes($0.1))) })
        let get: @Sendable (String, @escaping @Sendable (Device1Snapshot) -> DBusValue?) -> DBusProperty = { name, read in
            let signature = DBusSignature(name == "RSSI" || name == "TxPower" ? "n" : "b")
            return DBusProperty(name, signature: signature) {
                guard let value = read(await self.snapshot()) else { throw PropertyUnavailable() }
                return value
            }
        }
        return DBusInterface(
            name: BlueZInterface.device,
            methods: [
                // BlueZ answers Connect and Pair when the link or the agent has; other calls go on meanwhile.
                DBusMethod("Connect", dispatch: .concurrent) { _ in
                    try await self.connect()
                    return []
                },
                DBusMethod("Disconnect") { _ in
                    try await self.disconnect()
                    return []
                },
                DBusMethod("Pair", dispatch: .concurrent) { call in
                    try await self.pair(caller: call.sender)
                    return []
                },
                DBusMethod("CancelPairing") { _ in
                    try await self.cancelPairing()
                    return []
                },
                DBusMethod("ConnectProfile", inputs: [DBusArgument("UUID", "s")]) { _ in
                    throw BlueZError.notSupported
                },
                DBusMethod("DisconnectProfile", inputs: [DBusArgument("UUID", "s")]) { _ in
                    throw BlueZError.notSupported
                },
            ],
            properties: [
                DBusProperty("Address", signature: "s") { .string(configuration.address.uppercased()) },
                DBusProperty("AddressType", signature: "s") { .string(configuration.addressType) },
                DBusProperty("Name", signature: "s") { .string(await self.currentName) },
                DBusProperty("Alias", signature: "s") { .string(await self.currentName) },
                DBusProperty("Appearance", signature: "q") { .uint16(0) },
                DBusProperty("Icon", signature: "s") { .string("") },
                get("RSSI") { $0.rssi.map(DBusValue.int16) },
                get("TxPower") { $0.txPower.map(DBusValue.int16) },
                DBusProperty("UUIDs", signature: "as") {
                    // An SMP device advertises the SMP service as well (smpclient's scan filters on it).
                    let smp = configuration.smp == nil ? [] : [SMPGattLayout.service]
                    if let health = configuration.health { return .strings([HealthUUID.full(health.kind.primaryService)] + smp) }
                    return .strings((configuration.tetherService ? [TetherGattLayout.tetherService] : [TetherGattLayout.deviceInformationService]) + smp)
                },
                DBusProperty("ManufacturerData", signature: "a{qv}") { manufacturerData },
                DBusProperty("ServiceData", signature: "a{sv}") { .variantDictionary([:]) },
                get("Connected") { .bool($0.connected) },
                get("ServicesResolved") { .bool($0.servicesResolved) },
                get("Paired") { .bool($0.paired) },
                get("Bonded") { .bool($0.paired) },
                DBusProperty(
                    "Trusted", signature: "b", getter: { .bool(await self.snapshot().trusted) },
                    setter: { value in await self.setTrusted(value.boolValue ?? false) }),
                DBusProperty(
                    "Blocked", signature: "b", getter: { .bool(await self.snapshot().blocked) },
                    setter: { value in await self.setBlocked(value.boolValue ?? false) }),
                DBusProperty("LegacyPairing", signature: "b") { .bool(false) },
                DBusProperty("WakeAllowed", signature: "b") { .bool(false) },
                DBusProperty("Adapter", signature: "o") { .objectPath(adapterPath) },
            ],
            signals: [
                DBusSignalDeclaration(
                    "Disconnected", arguments: [DBusArgument("name", "s"), DBusArgument("message", "s")])
            ])
    }
}
