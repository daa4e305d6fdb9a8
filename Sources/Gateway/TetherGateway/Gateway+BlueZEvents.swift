import BlueZ
import ConnectionSupervisor
import DBus
import LinkProtocol
import TetherStore
import TetherPrimitives

/// The mirror's events: synchronisation and bluetoothd restarts, the agent's (re)registration, devices seen.
extension Gateway {
    func treeEvent(_ event: BlueZObjectTree.Event) async {
        switch event {
        case .synchronized:
            bluezSynchronized = true
            // BlueZ forgets agents when it restarts: register (again) after every synchronisation. Availability
            // waits for its outcome.
            agentNeedsRegistration = true
            await registerAgent()
        case .bluezRestarted:
            // Unavailable until the new bluetoothd's objects are read and the agent is registered with it. `agent`
            // stays: the next registration unregisters it, which also unexports its object.
            bluezSynchronized = false
            agentRegistration = .pending
            // The old bluetoothd's discovery session died with it.
            scanning = false
            discovering = false
            bluezLife += 1
        case .deviceAdded(let path, let properties):
            noteSeen(path, properties, adding: true)
        case .deviceChanged(let path, let changed, _):
            noteSeen(path, changed, adding: false)
        case .deviceRemoved, .propertiesChanged, .interfacesAdded, .interfacesRemoved:
            return
        }
    }

    /// Registers the agent while a registration is wanted; a synchronisation during one (bluetoothd restarted
    /// meanwhile) makes the running loop register again, so only the current bluetoothd's outcome counts.
    func registerAgent() async {
        guard !agentRegistering else { return }
        agentRegistering = true
        while agentNeedsRegistration {
            agentNeedsRegistration = false
            agentRegistration = .pending
            if let agent {
                self.agent = nil
                try? await agent.unregister()
            }
            let outcome: AgentRegistration
            do {
                agent = try await Agent.register(
                    session: session, path: configuration.agentPath, capability: .keyboardDisplay,
                    delegate: pairingRouter)
                outcome = .registered
            } catch {
                outcome = .failed("the pairing agent could not be registered with BlueZ: \(error)")
            }
            if !agentNeedsRegistration { agentRegistration = outcome }
        }
        agentRegistering = false
        if bluezAvailable {
            for waiter in readyWaiters { waiter.resume() }
            readyWaiters.removeAll()
        }
    }

    /// The RSSI value HCI uses for "not available".
    static let rssiNotAvailable: Int16 = 127

    func noteSeen(_ path: DBusObjectPath, _ properties: [String: DBusValue], adding: Bool) {
        guard let address = Device(session: session, path: path).address else { return }
        var entry = seen[address] ?? Seen()
        if let name = properties["Name"]?.stringValue ?? properties["Alias"]?.stringValue { entry.name = name }
        // An RSSI update means an advertising report arrived. 127 is HCI's "RSSI is not available" (Core 5.3
        // Vol 4 Part E 7.7.65.2); the kernel and bluetoothd pass it through as RSSI = 127 (seen with btvirt's
        // controllers), so it marks the device as seen without a signal strength.
        let reported = properties["RSSI"]?.int16Value
        if let reported {
            entry.rssi = reported == Self.rssiNotAvailable ? nil : reported
            entry.lastSeenAt = clock.linkNow()
        }
        seen[address] = entry
        if knownAddresses().contains(address) { markDirty(address) }
        guard scanning, adding || reported != nil else { return }
        let result = ScanResult(
            address: address, name: entry.name, rssi: entry.rssi,
            known: serials[address] != nil || wanted.contains(address), paired: wanted.contains(address),
            lastSeenAt: clock.linkNow())
        scanResultsByAddress[address] = result
        for subscriber in scanSubscribers.values { subscriber.yield(result) }
    }
}
