import BlueZ
import ConnectionSupervisor
import DBus
import LinkProtocol
import TetherStore
import TetherPrimitives

/// Pairing, adopting and forgetting devices; desired settings reaching a connected device.
extension Gateway {
    // MARK: - Pairing and forgetting

    /// Pairs with the device at `address` through the gateway's Agent1; BlueZ's questions go to `delegate`
    /// (the daemon forwards them to the CLI). Discovers the device first if BlueZ does not know it yet. Then the
    /// device is adopted: trusted, connected and kept connected; the registry records it once it names itself.
    public func pair(address: String, delegate: any AgentDelegate) async throws(GatewayError) -> GatewayDevice {
        let address = address.uppercased()
        guard Self.isAddress(address) else { throw .invalidArgument("'\(address)' is not a Bluetooth address") }
        guard bluezSynchronized else { throw .unavailable("org.bluez is not on the bus") }
        switch agentRegistration {
        case .registered: break
        case .pending: throw .unavailable("the pairing agent is not registered with BlueZ yet")
        case .failed(let reason): throw .unavailable(reason)
        }
        guard pairingRouter.begin(delegate) else { throw .busy("Another pairing is in progress") }
        defer { pairingRouter.end() }
        let device = adapter.device(address: address)
        try await discoverIfNeeded(device)
        do {
            try await device.pair(timeout: configuration.pairingTimeout)
        } catch BlueZError.alreadyExists {
            // Already bonded in BlueZ: adopting it is all that is left.
        } catch BlueZError.authenticationCanceled, BlueZError.canceled, BlueZError.authenticationTimeout {
            throw .promptCanceled
        } catch {
            throw .pairingFailed("\(error)")
        }
        try? await device.setTrusted(true)
        bondsLost[address] = nil
        try recordAdopted(address)
        adopt(address)
        return snapshot(address)
    }

    /// Adopts a device that is already bonded in BlueZ (paired outside the gateway), without pairing again.
    public func adopt(address: String) throws(GatewayError) {
        let address = address.uppercased()
        guard Self.isAddress(address) else { throw .invalidArgument("'\(address)' is not a Bluetooth address") }
        try recordAdopted(address)
        adopt(address)
    }

    /// The adoption is durable before anyone hears it succeeded: a gateway killed at any moment after still wants
    /// the device when it starts again, whether or not the device ever named itself.
    private func recordAdopted(_ address: String) throws(GatewayError) {
        var random = SystemRandomNumberGenerator()
        do {
            try storage.peripherals.setAdopted(true, identityAddress: address, at: clock.linkNow(), using: &random)
        } catch {
            throw .storageFailed("\(error)")
        }
    }

    /// Forgets a device: disconnects it, removes it from BlueZ (bond and cached GATT) and marks it unpaired in the
    /// registry. Its stored data stays until synced and pruned.
    public func forget(_ serialOrAddress: String) async throws(GatewayError) {
        guard let address = resolve(serialOrAddress) else { throw .unknownDevice(serialOrAddress) }
        wanted.remove(address)
        rebondPending.remove(address)
        bondsLost[address] = nil
        await driver.unwant(address)
        await notificationSource.forget(adapter.devicePath(address: address))
        do {
            try await adapter.removeDevice(adapter.devicePath(address: address))
        } catch BlueZError.doesNotExist {
        } catch BlueZError.dbus(let error) where error.code == .unknownObject {
        } catch {
            throw .unavailable("RemoveDevice failed: \(error)")
        }
        let serial = serials[address] ?? sessions[address]?.counters.withLock { $0.serial }
        var random = SystemRandomNumberGenerator()
        do {
            try storage.peripherals.setAdopted(false, identityAddress: address, at: clock.linkNow(), using: &random)
            if let serial {
                try storage.registry.setPairingState(.unpaired, serial: serial, at: clock.linkNow(), using: &random)
            }
        } catch {
            throw .storageFailed("\(error)")
        }
        markDirty(address)
    }

    /// The desired settings of `serial` changed (SetSettings, a sync pull): send them if the device is connected.
    public func desiredSettingsChanged(serial: String) throws(GatewayError) {
        guard let address = resolve(serial) else { throw .unknownDevice(serial) }
        let config: DeviceConfig?
        do {
            config = try storage.settings.configToApply(serial: serial)
        } catch {
            throw .storageFailed("\(error)")
        }
        if let config { sessions[address]?.send(.desiredConfig(config)) }
    }

    /// Makes sure BlueZ knows the device before `Pair`: discovery until it is exported, at most 10 s.
    func discoverIfNeeded(_ device: Device) async throws(GatewayError) {
        if await tree.devices[device.path] != nil { return }
        let events = await tree.events()
        pairingDiscovery = true
        defer { pairingDiscovery = false }
        try await updateDiscovery()
        let path = device.path
        let found: Bool
        if await tree.devices[path] != nil {
            found = true
        } else {
            found =
                (try? await withThrowingTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        for await event in events {
                            if case .deviceAdded(path, _) = event { return true }
                        }
                        return false
                    }
                    group.addTask {
                        try await Task.sleep(for: .seconds(10))
                        return false
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? false
                }) ?? false
        }
        guard found else { throw .unknownDevice("\(device.address ?? path.rawValue) (not seen within 10 s)") }
    }

    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }
}
