import BlueZ
import ConnectionSupervisor
import DBus
import LinkProtocol
import TetherStore
import TetherPrimitives

/// Observation: device snapshots (one source for a device's state), status, change and scan subscribers.
extension Gateway {
    // MARK: - Observation

    /// Every device the gateway knows of: adopted, connected or being supervised.
    public func devices() -> [GatewayDevice] {
        knownAddresses().sorted().map(snapshot)
    }

    /// The device with this serial or address, if known.
    public func device(_ serialOrAddress: String) -> GatewayDevice? {
        guard let address = resolve(serialOrAddress) else { return nil }
        return snapshot(address)
    }

    /// Device snapshots whenever one changes (state, counters, last error), at most one per device per
    /// `changeInterval`. Finishes when the gateway stops.
    public func changes() -> AsyncStream<GatewayDevice> {
        let (stream, continuation) = AsyncStream.makeStream(of: GatewayDevice.self)
        let id = nextSubscriber
        nextSubscriber += 1
        changeSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    public func status() -> GatewayStatus {
        let addresses = knownAddresses()
        return GatewayStatus(
            bluezAvailable: bluezAvailable, agentError: agentError, adapter: adapter.path.rawValue, scanning: scanning,
            devicesKnown: addresses.count,
            // The same state `devices()` shows: one definition of "connected" (GatewayDevice.State).
            devicesConnected: addresses.count { snapshot($0).state == .connected },
            eventsStoredSinceStart: sessions.values.reduce(0) { $0 + $1.counters.withLock { $0.eventsStoredSinceStart } })
    }

    var agentError: String? {
        guard case .failed(let reason) = agentRegistration else { return nil }
        return reason
    }

    func unsubscribe(_ id: UInt64) {
        changeSubscribers[id] = nil
        scanSubscribers[id] = nil
    }

    func knownAddresses() -> Set<String> {
        wanted.union(statuses.keys).union(sessions.keys).union(unsupported.keys)
    }

    func resolve(_ serialOrAddress: String) -> String? {
        let upper = serialOrAddress.uppercased()
        if knownAddresses().contains(upper) { return upper }
        if let (address, _) = serials.first(where: { $0.value == serialOrAddress }) { return address }
        for (address, session) in sessions where session.counters.withLock({ $0.serial }) == serialOrAddress {
            return address
        }
        if let record = try? storage.registry.device(serial: serialOrAddress), let address = record.address {
            return address
        }
        return nil
    }

    /// For a test that failed: what the gateway's mirror and discovery state say about `address`.
    public func diagnostics(_ address: String) async -> String {
        let inMirror = await tree.devices[adapter.devicePath(address: address)] != nil
        return "inMirror=\(inMirror) discovering=\(discovering) wanted=\(wanted.contains(address)) "
            + "rebondPending=\(rebondPending.contains(address)) bluezSynchronized=\(bluezSynchronized)"
    }

    func snapshot(_ address: String) -> GatewayDevice {
        var device = GatewayDevice(address: address)
        device.paired = wanted.contains(address)
        device.serial = serials[address]
        let linkIsUp = sessions[address]?.counters.withLock { $0.linkIsUp } ?? standardLinksUp.contains(address)
        device.state = GatewayDevice.State(statuses[address]?.phase, linkIsUp: linkIsUp)
        if let status = statuses[address] { device.attempts = status.attempts }
        device.lastError = unsupported[address] ?? lastErrors[address] ?? bondsLost[address]
        device.heldFor = holds[address]?.purpose
        if let seen = seen[address] {
            device.name = seen.name
            device.rssi = seen.rssi
            device.lastSeenAt = seen.lastSeenAt
        }
        if let counters = sessions[address]?.counters.withLock({ $0 }) {
            device.serial = counters.serial ?? device.serial
            device.firmware = counters.firmware
            device.batteryPercent = counters.batteryPercent
            device.eventsStored = counters.eventsStored
            device.framesReceived = counters.framesReceived
            device.framesSent = counters.framesSent
            device.notifyMethod = counters.notifyMethod
            device.mtu = counters.mtu
            device.linksEstablished = counters.linksEstablished
            if let last = counters.lastSeenAt, last > (device.lastSeenAt ?? last) || device.lastSeenAt == nil {
                device.lastSeenAt = last
            }
            if let storageError = counters.lastStorageError { device.lastError = "storage: \(storageError)" }
        }
        return device
    }

    func markDirty(_ address: String) {
        dirty.insert(address)
    }

    /// Publishes dirty devices every `changeInterval` (the control API's "at most 4 per second per device").
    func publishChanges() async {
        while !Task.isCancelled {
            do { try await clock.sleep(configuration.changeInterval) } catch { return }
            flushChanges()
            try? await updateDiscovery()
        }
    }

    func flushChanges() {
        guard !dirty.isEmpty else { return }
        let addresses = dirty
        dirty.removeAll()
        for address in addresses.sorted() {
            let device = snapshot(address)
            guard published[address] != device else { continue }
            published[address] = device
            for subscriber in changeSubscribers.values { subscriber.yield(device) }
        }
    }
}
