import DBus
import Foundation
import HealthDeviceModel
import TetherPrimitives

/// A standard health device behind the GATT objects: reads, writes and subscriptions go to its `HealthDevice`
/// model; the link's connection events pull its values out (SimulatedDevice+Link), one indication per event
/// (BlueZ confirms an indication on receipt, Core v5.3 Vol 3 Part F §3.4.7.2, and the confirmation travels in the
/// next connection event), and hand them to clients as BlueZ does for both kinds: a Value PropertiesChanged per
/// StartNotify session, or one packet on an AcquireNotify socket.
extension SimulatedDevice {
    var healthRecordsStored: Int { health?.store.records.count ?? 0 }

    /// The keys of the records in the device's memory, oldest first (sequence numbers; CGM time offsets): what a
    /// test of RACP deletion checks directly.
    public var healthRecordKeys: [UInt16] { health?.store.records.map(\.key) ?? [] }

    func readHealth(_ uuid: UInt16) throws -> [UInt8] {
        guard health != nil else { throw BlueZError.notSupported }
        do {
            let value = try health!.read(uuid, at: WallClock.now())
            healthValues[uuid] = value
            return value
        } catch {
            throw BlueZError.att(error.rawValue)
        }
    }

    func writeHealth(_ uuid: UInt16, _ bytes: [UInt8]) throws {
        guard health != nil else { throw BlueZError.notSupported }
        writesReceived += 1
        do {
            try health!.write(uuid, bytes, at: WallClock.now())
            healthWrites.append(HealthWrite(characteristic: uuid, bytes: bytes))
        } catch {
            throw BlueZError.att(error.rawValue)
        }
    }

    func healthCCCDValue(_ uuid: UInt16) -> [UInt8] {
        guard let health, health.isEnabled(uuid) else { return [0x00, 0x00] }
        let indicates = health.declaration(of: uuid)?.properties.contains(.indicate) == true
            && health.declaration(of: uuid)?.properties.contains(.notify) != true
        return indicates ? [0x02, 0x00] : [0x01, 0x00]
    }

    /// StartNotify: the first session writes the CCCD; the device may refuse it (ATT 0x05 on an unbonded link where
    /// the profile requires security, which bluetoothd reports as NotPermitted "Not paired").
    func startHealthNotify(_ uuid: UInt16, sender: String) throws {
        startNotifyCalls += 1
        guard isConnected, health != nil else { throw BlueZError.notConnected }
        guard healthNotifySockets[uuid] == nil else { throw BlueZError.notPermitted("Notify acquired") }
        var sessions = healthNotifySessions[uuid] ?? []
        guard !sessions.contains(sender) else { return }
        if sessions.isEmpty {
            do { try health!.subscribe(uuid, at: WallClock.now()) } catch { throw BlueZError.att(error.rawValue) }
        }
        sessions.append(sender)
        healthNotifySessions[uuid] = sessions
        if sessions.count == 1 { emit(["Notifying": .bool(true)], at: characteristicPath(role: .health(uuid))) }
    }

    func stopHealthNotify(_ uuid: UInt16, sender: String) throws {
        guard var sessions = healthNotifySessions[uuid], let index = sessions.firstIndex(of: sender) else {
            throw BlueZError.failed("No notify session started")
        }
        sessions.remove(at: index)
        healthNotifySessions[uuid] = sessions
        if sessions.isEmpty {
            health?.unsubscribe(uuid)
            emit(["Notifying": .bool(false)], at: characteristicPath(role: .health(uuid)))
        }
    }

    /// A pending `health-subscribe-failure` of `uuid`: the CCCD write goes unanswered for the fault's delay, then
    /// fails as bluetoothd reports a failed CCCD write (org.bluez.Error.Failed). The device model is not touched:
    /// the CCCD stays off. Other calls are served meanwhile (the actor is free while this waits).
    func healthSubscribeFault(_ uuid: UInt16) async throws {
        guard let pending = pendingHealthSubscribeFailures[uuid], pending.count > 0 else { return }
        pendingHealthSubscribeFailures[uuid] = pending.count > 1 ? (pending.count - 1, pending.delay) : nil
        try? await Task.sleep(for: pending.delay)
        throw BlueZError.failed("writing the CCCD of 0x\(String(uuid, radix: 16, uppercase: true)) failed (fault)")
    }

    func acquireHealthNotify(_ uuid: UInt16) throws -> (OwnedFileDescriptor, UInt16) {
        guard isConnected, health != nil else { throw BlueZError.notConnected }
        guard healthNotifySockets[uuid] == nil, (healthNotifySessions[uuid] ?? []).isEmpty else {
            throw BlueZError.notPermitted("Notify acquired")
        }
        do { try health!.subscribe(uuid, at: WallClock.now()) } catch { throw BlueZError.att(error.rawValue) }
        socketNumber += 1
        let (socket, clientEnd) = try SeqPacketSocket.makePair(id: socketNumber)
        healthNotifySockets[uuid] = socket
        emit(["NotifyAcquired": .bool(true)], at: characteristicPath(role: .health(uuid)))
        watch(socket)
        return (clientEnd, link.mtu)
    }

    /// A health AcquireNotify socket closed by its client.
    func healthSocketClosed(_ id: UInt64) -> Bool {
        guard let uuid = healthNotifySockets.first(where: { $0.value.id == id })?.key else { return false }
        healthNotifySockets[uuid] = nil
        health?.unsubscribe(uuid)
        emit(["NotifyAcquired": .bool(false)], at: characteristicPath(role: .health(uuid)))
        return true
    }

    func healthClientVanished(_ name: String) {
        for (uuid, sessions) in healthNotifySessions where sessions.contains(name) {
            try? stopHealthNotify(uuid, sender: name)
        }
    }

    /// The link is up. A device that forgot the bond refuses the encryption a bonded central starts at once: the
    /// link drops with an authentication failure and Connect fails (key missing) until the central removes the
    /// device and pairs again.
    func healthLinkUp() async throws {
        guard health != nil else { return }
        do {
            try health!.connected(encrypted: isPaired, at: WallClock.now())
        } catch {
            await dropLink(reason: ("org.bluez.Reason.Authentication", "Connection terminated due to an authentication failure"))
            throw BlueZError.keyMissing
        }
    }

    func healthPaired() {
        health?.paired()
    }

    func healthLinkDown() {
        health?.disconnected()
        for socket in healthNotifySockets.values { socket.shutDown() }
        for uuid in healthNotifySockets.keys { emit(["NotifyAcquired": .bool(false)], at: characteristicPath(role: .health(uuid))) }
        healthNotifySockets.removeAll()
        for (uuid, sessions) in healthNotifySessions where !sessions.isEmpty {
            emit(["Notifying": .bool(false)], at: characteristicPath(role: .health(uuid)))
        }
        healthNotifySessions.removeAll()
    }

    /// One connection event: confirm the indication sent in the previous event, let time pass, then send up to
    /// `notificationsPerEvent` values (an indication ends the event's sending).
    func healthConnectionEvent() async {
        guard health != nil, isConnected else { return }
        let now = WallClock.now()
        health!.indicationConfirmed()
        health!.advance(to: now)
        var budget = max(link.notificationsPerEvent, 1)
        while budget > 0, isConnected, let output = health!.next(at: now) {
            switch output {
            case .disconnect:
                await remoteDisconnect()
                return
            case .transmit(let transmission):
                sendHealth(transmission)
                budget -= 1
                if transmission.delivery == .indicate { return }
            }
        }
    }

    func sendHealth(_ transmission: HealthTransmission) {
        let uuid = transmission.characteristic
        healthValues[uuid] = transmission.value
        healthTransmissions.append(transmission)
        let path = characteristicPath(role: .health(uuid))
        healthNotifySockets[uuid]?.send(transmission.value)
        for _ in healthNotifySessions[uuid] ?? [] {
            emit(["Value": .bytes(transmission.value)], at: path, interface: BlueZInterface.gattCharacteristic)
        }
        notificationsSent += 1
    }

    /// Whether a client has this health characteristic's values coming (StartNotify or AcquireNotify): for tests
    /// that must not make the device send before the gateway listens.
    public func isHealthSubscribed(_ uuid: UInt16) -> Bool {
        healthNotifySockets[uuid] != nil || !(healthNotifySessions[uuid] ?? []).isEmpty
    }

    // MARK: - Control

    /// The person takes a measurement (control surface).
    func takeHealthMeasurement(user: UInt8?) -> Bool {
        guard health != nil else { return false }
        health!.measure(at: WallClock.now(), user: user)
        return true
    }

    func injectHealthFault(_ kind: String, options: [String: DBusValue]) throws {
        guard health != nil else { throw BlueZError.notSupported }
        let count = Int(options["count"]?.uint32Value ?? 1)
        switch kind {
        case "racp-disconnect":
            health!.racpFaults.disconnectAfterRecords = Int(options["after_records"]?.uint32Value ?? 0)
        case "racp-not-completed":
            health!.racpFaults.notCompletedAfterRecords = Int(options["after_records"]?.uint32Value ?? 0)
        case "racp-busy":
            health!.racpFaults.serverBusyResponses += count
        case "racp-in-progress":
            health!.racpFaults.procedureInProgressRefusals += count
        case "racp-abort-unsuccessful":
            health!.racpFaults.abortUnsuccessful = options["enabled"]?.boolValue ?? true
        case "racp-delete-unsupported":
            health!.racpFaults.deleteUnsupported = options["enabled"]?.boolValue ?? true
        case "special-values":
            guard let special = MedicalFloatSpecial(rawValue: options["value"]?.stringValue ?? "nan") else {
                throw BlueZError.invalidArguments
            }
            health!.injectSpecialValues(special, count: count)
        case "error-records":
            health!.injectErrorRecords(count: count)
        case "clock-not-set":
            health!.loseClock(at: WallClock.now())
        case "sequence-reset":
            let first = UInt16(clamping: options["first_sequence"]?.uint32Value ?? 1)
            health!.reset(forgetBond: false, clearMemory: true, firstSequenceNumber: first, at: WallClock.now())
        case "delete-records":
            // Records gone without the gateway asking: `sequence` through `through` (default: that one record).
            guard let first = options["sequence"]?.uint32Value, first <= UInt32(UInt16.max) else { throw BlueZError.invalidArguments }
            let last = options["through"]?.uint32Value ?? first
            guard last >= first, last <= UInt32(UInt16.max) else { throw BlueZError.invalidArguments }
            health!.forgetRecords(keyed: UInt16(first)...UInt16(last))
        case "live-measurements":
            // Not a fault: the person takes the strap off (`enabled` false) or puts it back on.
            health!.liveMeasurementsPaused = !(options["enabled"]?.boolValue ?? true)
        case "forget-bond":
            health!.reset(forgetBond: true, clearMemory: false, at: WallClock.now())
        case "subscribe-failure":
            guard let uuid = options["characteristic"]?.uint16Value, health!.declaration(of: uuid) != nil else {
                throw BlueZError.invalidArguments
            }
            let delay = Duration.milliseconds(Int(options["delay_ms"]?.uint32Value ?? 0))
            pendingHealthSubscribeFailures[uuid] = (count, delay)
        default:
            throw BlueZError.invalidArguments
        }
    }
}
