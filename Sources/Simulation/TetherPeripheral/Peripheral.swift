import DBus
import Foundation
import LinkProtocol
import SMPDeviceModel
import TetherPrimitives

/// A Tether device on a real controller: the firmware model behind a GATT application and an LE advertisement
/// registered with bluetoothd, an optional passkey agent, hits on a schedule and one power cycle; with an SMP image,
/// MCUmgr's SMP service beside it (SMPLink), whose reset reboots the device as a power cycle does.
///
/// `run()` returns when the schedule is done and every hit was acknowledged, or throws when bluetoothd refuses
/// something. Everything the device did is in the event log.
public actor Peripheral {
    public let configuration: PeripheralConfiguration
    private let connection: DBusConnection
    private let log: EventLog
    private let application: GattApplication
    /// Two identical advertisements, registered in turn (`keepAdvertising`).
    private let advertisements: [Advertisement]
    /// The one of `advertisements` registered last.
    private var advertising = 0
    private let link: DeviceLink
    private let smp: (service: SMPGattService, link: SMPLink)?
    /// One power cycle at a time (the schedule's and an SMP reset's).
    private var poweringOff = false
    private var connectedCentrals: Set<DBusObjectPath> = []
    private var registered = false

    public static let root: DBusObjectPath = "/io/tether/peripheral"

    public init(configuration: PeripheralConfiguration, connection: DBusConnection) throws {
        self.configuration = configuration
        self.connection = connection
        let log = try EventLog(url: configuration.eventLog)
        self.log = log
        application = GattApplication(root: Self.root, requiresAuthentication: configuration.passkey != nil)
        advertisements = (0..<2).map {
            Advertisement(path: DBusObjectPath(Self.root.rawValue + "/advertisement\($0)"), localName: configuration.localName)
        }
        let txPath = application.txPath
        link = DeviceLink(profile: configuration.firmware, log: log) { value in
            // One PropertiesChanged on Value = one ATT notification from bluetoothd, in order.
            try? connection.objectServer.emitPropertiesChanged(
                path: txPath, interface: BlueZName.gattCharacteristic, changed: ["Value": .bytes(value)])
        }
        if let image = configuration.smpImage {
            let bytes = try [UInt8](Data(contentsOf: image))
            guard let factory = SlotImage(bytes) else {
                throw PeripheralError("\(image.path) is not an MCUboot image with a SHA256 TLV")
            }
            let service = SMPGattService(root: Self.root, requiresAuthentication: configuration.passkey != nil)
            let path = service.characteristicPath
            let smpLink = SMPLink(server: SMPBluetoothServer(device: SMPDevice(factoryImage: factory)), log: log) { value in
                try? connection.objectServer.emitPropertiesChanged(
                    path: path, interface: BlueZName.gattCharacteristic, changed: ["Value": .bytes(value)])
            }
            smp = (service, smpLink)
        } else {
            smp = nil
        }
    }

    public func run() async throws {
        log.note("start", ["serial": configuration.serial, "passkey": configuration.passkey != nil, "showsPasskey": configuration.showsPasskey])
        let adapter = DBusObjectPath(configuration.adapter)
        try await setAdapter(adapter, "Powered", true)
        // real-bluez-vm.md, pitfall 4: scanners ignore LE advertisers whose adapter is not discoverable.
        try await setAdapter(adapter, "Discoverable", true)
        try await setAdapter(adapter, "DiscoverableTimeout", .uint32(0))
        if let passkey = configuration.passkey {
            let agent = PasskeyAgent(path: DBusObjectPath(Self.root.rawValue + "/agent"), passkey: passkey)
            try await connection.objectServer.export([agent.interface(log: log)], at: agent.path)
            _ = try await bluez("/org/bluez", BlueZName.agentManager, "RegisterAgent", [.objectPath(agent.path), .string(configuration.showsPasskey ? "DisplayOnly" : "KeyboardOnly")])
            _ = try await bluez("/org/bluez", BlueZName.agentManager, "RequestDefaultAgent", [.objectPath(agent.path)])
        }
        try await application.export(on: connection, link: link)
        if let smp {
            try await smp.service.export(on: connection, link: smp.link)
            // SMPLink rule 4: the whole chip reboots after an SMP reset.
            await smp.link.onReboot { [weak self] in try? await self?.powerCycle() }
            let slots = await smp.link.slots
            log.note("smp-ready", ["running": slots.primary.version, "runningHash": Hex.encode(slots.primary.hash)])
        }
        for advertisement in advertisements {
            try await advertisement.export(on: connection) { [weak self] in await self?.advertisementReleased() }
        }

        let changes = try await connection.signals(matching: DBusMatchRule(
            sender: BlueZName.service, interface: BlueZName.properties, member: "PropertiesChanged", pathNamespace: adapter))
        let watcher = Task { [weak self] in
            for await signal in changes { await self?.propertiesChanged(signal) }
        }
        defer { watcher.cancel() }

        try await registerApplication()
        let advertiser = Task { [weak self] in await self?.keepAdvertising() }
        defer { advertiser.cancel() }

        let startingConfigVersion = await link.config.version
        try await produceHits(count: configuration.hits, from: 0)
        if let threshold = configuration.rebootAfterAcknowledged {
            try await waitUntil { await self.link.released >= threshold }
            try await powerCycle()
            try await produceHits(count: configuration.hitsAfterReboot, from: configuration.hits)
        }
        try await waitUntil { await self.link.storedEvents == 0 }
        if configuration.awaitsSettingsChange {
            try await waitUntil { await self.link.config.version != startingConfigVersion }
            // Applying SET_CONFIG queues the device's CONFIG_DATA report; leaving before the gateway acknowledged
            // it would leave the gateway believing the old version (the report is how it learns the new one). A
            // dropped link loses the queue and ends the wait.
            try await waitUntil { await !self.link.hasUnacknowledgedMessages }
        }
        let config = await link.config
        log.note("all-released", [
            "produced": await link.produced, "released": await link.released, "boot": Int(await link.bootCounter),
            "configVersion": Int(config.version), "sensitivity": Int(config.settings.sensitivity ?? 0),
            "ledBrightness": Int(config.settings.ledBrightness ?? 0),
        ])
        if configuration.awaitsFirmwareUpdate, let smp {
            try await waitUntil { await smp.link.runsConfirmedUpdate }
            let slots = await smp.link.slots
            log.note("firmware-confirmed", [
                "running": slots.primary.version, "runningHash": Hex.encode(slots.primary.hash), "resets": slots.resets,
                "boot": Int(await link.bootCounter),
            ])
            // The gateway gives the device back to its session after the update: the Tether link comes up again.
            try await waitUntil { await self.link.isLinkUp }
            log.note("link-back-after-update")
        }
        if let leavesAfter = configuration.leavesAfter {
            try await waitUntil { FileManager.default.fileExists(atPath: leavesAfter.path) }
            poweringOff = true
            log.note("leaving")
            try await setAdapter(adapter, "Powered", false)
        }
    }

    // MARK: - The device's schedule

    private func produceHits(count: Int, from first: Int) async throws {
        for index in first..<(first + count) {
            await link.recordHit(index: index)
            try await Task.sleep(for: configuration.hitInterval)
        }
    }

    /// The device loses power: its radio goes off (the link drops, the advertisement ends, nothing can connect),
    /// the firmware reboots keeping its unacknowledged events, and after a pause the radio, the GATT application
    /// and the advertisement come back.
    private func powerCycle() async throws {
        guard !poweringOff else { return }
        poweringOff = true
        defer { poweringOff = false }
        log.note("power-off")
        await link.reboot()
        await smp?.link.centralDisconnected()
        for advertisement in advertisements { await unregister(advertisement) }
        // The GATT application stays registered: a real device's attribute table is in its firmware and survives a
        // reboot, so the bonded central finds the same database (the same hash: no rediscovery, no Service Changed).
        // Unregistering it while connected made bluetoothd 5.66 send Service Changed on the live link and remove the
        // services under a subscribe in flight, a use-after-free (BlueZ 476ae809a, released in 5.84).
        let adapter = DBusObjectPath(configuration.adapter)
        try await setAdapter(adapter, "Powered", false)
        try await Task.sleep(for: configuration.rebootPause)
        try await setAdapter(adapter, "Powered", true)
        try await setAdapter(adapter, "Discoverable", true)
        log.note("power-on", ["boot": Int(await link.bootCounter)])
    }

    private func registerApplication() async throws {
        _ = try await bluez(configuration.adapter, BlueZName.gattManager, "RegisterApplication", [.objectPath(Self.root), .variantDictionary([:])])
        registered = true
        log.note("application-registered")
    }

    /// While no central is connected, register an advertisement again every `advertisementRefresh`: the other of
    /// the two, and only then unregister the one before, so one is always registered. With a single one
    /// unregistered and registered again, a central's `Pair` landing in between hung until it timed out: bluetoothd
    /// sends one management command at a time and waits for its reply (src/shared/mgmt.c, `can_write_data`), the
    /// kernel answers Pair Device only once the device is found, and the device's Add Advertising queued behind it
    /// (both adapters share the VM's one bluetoothd; seen once in CI: 3 RegisterAdvertisement calls without a
    /// reply, no advertisement on hci0 from the Remove before Pair Device to its Cancel 95 s later).
    private func keepAdvertising() async {
        while !Task.isCancelled {
            if connectedCentrals.isEmpty && registered && !poweringOff {
                let next = 1 - advertising
                // bluetoothd keeps a connectable advertisement registered across a connection (a second
                // RegisterAdvertisement fails with AlreadyExists), so unregister it first.
                await unregister(advertisements[next])
                do {
                    _ = try await bluez(
                        configuration.adapter, BlueZName.advertisingManager, "RegisterAdvertisement",
                        [.objectPath(advertisements[next].path), .variantDictionary([:])])
                    await unregister(advertisements[advertising])
                    advertising = next
                } catch {
                    log.note("advertise-failed", ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: configuration.advertisementRefresh)
        }
    }

    /// Unregisters `advertisement` if bluetoothd has it (DoesNotExist otherwise: nothing to do).
    private func unregister(_ advertisement: Advertisement) async {
        _ = try? await bluez(configuration.adapter, BlueZName.advertisingManager, "UnregisterAdvertisement", [.objectPath(advertisement.path)])
    }

    private func advertisementReleased() {
        log.note("advertisement-released")
    }

    // MARK: - Facts from bluetoothd

    private func propertiesChanged(_ signal: DBusSignal) async {
        guard signal.arguments.first?.stringValue == BlueZName.device,
            let connected = signal.arguments.dropFirst().first?.variantDictionaryValue?["Connected"]?.unwrappingVariants.boolValue
        else { return }
        if connected {
            connectedCentrals.insert(signal.path)
            log.note("central-connected", ["device": signal.path.rawValue])
        } else {
            connectedCentrals.remove(signal.path)
            log.note("central-disconnected", ["device": signal.path.rawValue])
            await link.centralDisconnected()
            await smp?.link.centralDisconnected()
        }
    }

    // MARK: - Helpers

    private func setAdapter(_ adapter: DBusObjectPath, _ name: String, _ value: Bool) async throws {
        try await setAdapter(adapter, name, .bool(value))
    }

    private func setAdapter(_ adapter: DBusObjectPath, _ name: String, _ value: DBusValue) async throws {
        _ = try await bluez(adapter.rawValue, BlueZName.properties, "Set", [.string(BlueZName.adapter), .string(name), .variant(value)])
    }

    @discardableResult
    private func bluez(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await connection.call(
            destination: BlueZName.service, path: DBusObjectPath(path), interface: interface, member: member,
            arguments: arguments, timeout: .seconds(30))
    }

    /// Waits for `condition`, checking every 100 ms (the device's own loop; bounded by the scenario's timeout).
    private func waitUntil(_ condition: @Sendable () async -> Bool) async throws {
        while !(await condition()) {
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

struct PeripheralError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
