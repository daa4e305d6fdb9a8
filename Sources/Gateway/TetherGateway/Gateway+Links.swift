import BlueZ
import ConnectionSupervisor
import DBus
import LinkProtocol
import TetherStore
import TetherPrimitives

/// Links: supervisor-driver events, link set-up, classification into peripheral sessions, re-bonding.
extension Gateway {
    // MARK: - Events

    func driverEvent(_ event: SupervisorDriver.Event) async {
        switch event {
        case .linkUp(let address):
            if rebondPending.contains(address) {
                rebond(address)
            } else {
                startLink(address)
            }
        case .bondRemoved(let address):
            if wanted.contains(address) { rebondPending.insert(address) }
        case .failed(let address, let reason):
            lastErrors[address] = reason
            markDirty(address)
        case .linkDown(let address, let reason):
            linkSetups.removeValue(forKey: address)?.cancel()
            standardLinksUp.remove(address)
            sessions[address]?.linkDown()
            for session in otherSessions[address, default: [:]].values { session.linkDown() }
            if let reason { lastErrors[address] = "disconnected: \(reason)" }
            markDirty(address)
        case .statusChanged:
            let current = await driver.statuses
            var updated: [String: DeviceStatus] = [:]
            for (address, status) in current { updated[address.rawValue] = status }
            for address in Set(updated.keys).union(statuses.keys) where updated[address] != statuses[address] {
                markDirty(address)
                if let error = await driver.lastError(of: address) { lastErrors[address] = error }
            }
            statuses = updated
        }
    }

    func sessionFor(_ address: String) -> DeviceSession {
        if let session = sessions[address] { return session }
        let driver = driver
        let session = DeviceSession(
            address: address, storage: storage, configuration: configuration, clock: clock,
            abandon: { reason in await driver.abandonLink(address, reason: reason) },
            healthy: { [weak self] in await self?.linkHealthy(address) },
            named: { [weak self] serial in await self?.deviceNamed(address, serial: serial) },
            changed: { [weak self] in Task { await self?.markDirty(address) } })
        sessions[address] = session
        sessionTasks[address] = Task { await session.run() }
        return session
    }

    /// The device's session completed its handshake on this link: the link is healthy, so the device's last error
    /// goes and the supervisor forgives its failed attempts.
    func linkHealthy(_ address: String) async {
        lastErrors[address] = nil
        markDirty(address)
        await driver.linkHealthy(address)
    }

    /// The device's DEVICE_INFO is durably stored: the registry links the address to the serial and records the
    /// pairing (the backend hears of it through the outbox) — unless it was forgotten meanwhile.
    func deviceNamed(_ address: String, serial: String) {
        serials[address] = serial
        guard wanted.contains(address) else { return }
        var random = SystemRandomNumberGenerator()
        let now = clock.linkNow()
        try? storage.registry.recordAddress(address, serial: serial, at: now, using: &random)
        try? storage.registry.setPairingState(.paired, serial: serial, at: now, using: &random)
    }

    /// After Connect: resolve the device's services (bounded), decide its kinds (`PeripheralClassifier`) and hand the
    /// connection to one session per kind. A session that cannot set its kind up abandons the link: disconnect, and
    /// the supervisor retries under its rules. A device with no primary kind is unsupported and let go.
    func startLink(_ address: String) {
        // Gateway+Holds rule 1: a held device's links are its holder's; `release` sets the current one up.
        guard holds[address] == nil else { return markDirty(address) }
        nextLinkNumber += 1
        let number = nextLinkNumber
        let device = adapter.device(address: address)
        let (bluez, tree, source, driver) = (self.session, self.tree, notificationSource, self.driver)
        let preference = configuration.notifyPreference
        let timeout = configuration.linkSetupTimeout
        let healthSink = configuration.health
        linkSetups[address]?.cancel()
        linkSetups[address] = Task {
            do {
                let services = try await PeripheralLink.resolvedServices(of: device, in: tree, timeout: timeout)
                let classification = PeripheralClassifier.classify(services, servingHealth: healthSink != nil)
                let sessions = await self.classified(address, classification)
                let link = PeripheralLink(
                    number: number, device: device, session: bluez, tree: tree, notificationSource: source,
                    services: services, notifyPreference: preference, timeout: timeout)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for session in sessions { group.addTask { try await session.linkUp(link) } }
                    try await group.waitForAll()
                }
                // Identified (its Device Information read, when it has one), and let go.
                if !classification.isSupported {
                    await self.letGo(address)
                } else if !classification.kinds.contains(.tetherLink) {
                    await self.standardLinkUp(address, number: number)
                }
            } catch is CancellationError {
            } catch {
                await driver.abandonLink(address, reason: "link set-up failed: \(error)")
            }
            self.linkSetupFinished(address, number: number)
        }
        linkSetupNumbers[address] = number
    }

    /// Records what the device is (peripheral registry) and returns the sessions to hand its connection to, primary
    /// kinds first. An unsupported device keeps its verdict, with the services it offered, in its snapshot.
    func classified(_ address: String, _ classification: PeripheralClassifier.Classification) async
        -> [any PeripheralSession]
    {
        var random = SystemRandomNumberGenerator()
        try? storage.peripherals.recordClassification(
            kinds: classification.kinds, services: classification.offeredServices, identityAddress: address,
            at: clock.linkNow(), using: &random)
        unsupported[address] = classification.isSupported
            ? nil
            : "unsupported device: it offers none of the services the gateway serves (offers "
                + classification.offeredServices.joined(separator: ", ") + ")"
        markDirty(address)
        return classification.kinds.compactMap { session(for: $0, address) }
    }

    /// An unsupported device is not reconnected forever: the supervisor stops wanting it (and disconnects it).
    func letGo(_ address: String) async {
        wanted.remove(address)
        rebondPending.remove(address)
        await driver.unwant(address)
        markDirty(address)
    }

    func session(for kind: PeripheralKind, _ address: String) -> (any PeripheralSession)? {
        switch kind {
        case .tetherLink:
            return sessionFor(address)
        case .deviceInformation:
            if let session = otherSessions[address]?[kind] { return session }
            let session = DeviceInformationSession(
                address: address, storage: storage, clock: clock,
                failed: { [weak self] reason in await self?.sessionFailed(address, reason) })
            otherSessions[address, default: [:]][kind] = session
            return session
        case .health:
            if let session = otherSessions[address]?[kind] { return session }
            // Classified as health only when the gateway serves health (PeripheralClassifier rule 3).
            guard let sink = configuration.health else { return nil }
            let trace = configuration.trace
            let session = HealthSession(
                address: address, sink: sink, clock: clock, timeWrite: configuration.healthTimeWrite,
                deletion: configuration.healthRecordDeletion, audit: configuration.healthVanishedRecordAudit,
                userConsents: configuration.healthUserConsents[address.uppercased()] ?? [], trace: trace)
            otherSessions[address, default: [:]][kind] = session
            return session
        }
    }

    func sessionFailed(_ address: String, _ reason: String) {
        lastErrors[address] = reason
        markDirty(address)
    }

    /// Bonds a device again after the supervisor's RemoveDevice deleted its bond, then sets the link up. There is no
    /// technician to ask: the agent rejects every question, so a just-works device bonds again and a device that
    /// needs a passkey or a confirmation does not — its `lastError` says to pair it again. A technician's pairing in
    /// progress holds the agent: then the re-bond waits for the next link (never a prompt for the wrong device).
    func rebond(_ address: String) {
        let device = adapter.device(address: address)
        let timeout = configuration.pairingTimeout
        guard pairingRouter.begin(NoTechnicianDelegate()) else {
            startLink(address)
            return
        }
        rebondPending.remove(address)
        Task {
            let failure: String?
            do {
                try await device.pair(timeout: timeout)
                try? await device.setTrusted(true)
                failure = nil
            } catch BlueZError.alreadyExists {
                failure = nil
            } catch {
                failure = "bond lost when BlueZ's stale connection attempt was cleared (RemoveDevice), and bonding "
                    + "again without a technician failed: \(error); pair the device again"
            }
            await self.rebondFinished(address, failure: failure)
        }
    }

    func rebondFinished(_ address: String, failure: String?) async {
        pairingRouter.end()
        bondsLost[address] = failure
        markDirty(address)
        // The link may have dropped meanwhile: the next linkUp sets it up.
        guard await driver.connectedAddresses.contains(address), wanted.contains(address) else { return }
        startLink(address)
    }

    /// A device without a Tether link (a health device) finished setting its link up, every session subscribed:
    /// the link is up and healthy, as a Tether device's is after its handshake. Ignored if that link is gone.
    func standardLinkUp(_ address: String, number: UInt64) async {
        guard linkSetupNumbers[address] == number else { return }
        standardLinksUp.insert(address)
        await linkHealthy(address)
    }

    func linkSetupFinished(_ address: String, number: UInt64) {
        guard linkSetupNumbers[address] == number else { return }
        linkSetups[address] = nil
        linkSetupNumbers[address] = nil
    }
}
