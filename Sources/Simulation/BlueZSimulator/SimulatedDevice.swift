import DBus
import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherPrimitives

/// One simulated LE device: `org.bluez.Device1` at `/org/bluez/hci0/dev_XX_...`, its GATT objects, and the real
/// `DeviceModel` model behind them, driven with wall-clock time by the link task of each connection.
///
/// Signal order follows BlueZ (bluez-dbus-facts.md): Connect emits `Connected=true` before its reply, GATT
/// objects are announced after the reply and before `ServicesResolved=true`; a disconnect emits
/// `ServicesResolved=false`, `Disconnected(ss)`, `Connected=false`, then replies.
public actor SimulatedDevice {
    public nonisolated let path: DBusObjectPath
    public nonisolated let configuration: DeviceConfiguration
    nonisolated let services: [SimulatedGattService]
    private let connection: DBusConnection
    private let adapter: SimulatedAdapter
    private let agents: SimulatedAgentManager
    private let link: LinkModel
    private var random: SplitMix64

    // Device1 state.
    private(set) var isExported = false
    private var gattExported = false
    private var rssi: Int16?
    private var txPower: Int16?
    private(set) var isConnected = false
    private var servicesResolved = false
    private(set) var isPaired = false
    private var trusted = false
    private var blocked = false
    private var connecting = false
    private var pairing = false
    private var pairingCanceled = false
    /// What bluetoothd read from the GAP Device Name characteristic on connecting (nil before the first
    /// connection): Name and Alias from then on (`nameAfterConnect`).
    private var gapName: String?

    // bluetoothd restarts (`forgetForRestart`): a Connect or Pair that began under an earlier bluetoothd was dropped
    // with it and is answered with the bus's NoReply (`droppedByRestart`), never with a link.
    private var bluetoothdLife: UInt64 = 0
    private var connectWait: Task<Void, Never>?
    private var droppedCallsAnswered: Task<Void, Never>?

    // The link.
    private var firmware: DeviceModel
    private var outbox: [[UInt8]] = []
    private var linkTask: Task<Void, Never>?
    private var connectionNumber: UInt64 = 0
    private var notifySessions: [String] = []
    private var notifySocket: SeqPacketSocket?
    private var writeSocket: SeqPacketSocket?
    private var socketNumber: UInt64 = 0
    private var txValue: [UInt8] = []
    private var alertLevel: UInt8 = 0

    // Faults (see SimulatorControl).
    private var pendingConnectFailures: [DBusError] = []
    private var pendingAcquireNotifyFailures: [DBusError] = []
    var dropProbability = 0.0
    var duplicateProbability = 0.0
    var randomDisconnectMeanMilliseconds: UInt32 = 0

    /// Statistics for tests.
    public private(set) var notificationsSent = 0
    public private(set) var writesReceived = 0
    /// Notifications the drop-notifications fault took instead of sending.
    public private(set) var notificationsDropped = 0
    /// `Device1.Connect` / `Device1.Disconnect` calls and `StartNotify` sessions started on TX, for the gateway's
    /// supervisor and notify-method tests.
    public private(set) var connectCalls = 0
    public private(set) var disconnectCalls = 0
    public private(set) var startNotifyCalls = 0
    /// `Adapter1.RemoveDevice` calls that removed this device.
    public private(set) var removals = 0
    /// Every event the firmware forgot because the gateway acknowledged it, in order: the oracle for
    /// ACK-after-commit (each of them must be in the gateway's database).
    public private(set) var releasedEvents: [HitEvent] = []
    /// Events still in the device's flash, waiting for an ACK.
    public var unacknowledgedEvents: Int { firmware.eventStore.count }
    /// The settings the device holds (§7.11).
    public var config: DeviceConfig { firmware.config }
    /// Whether a reliable frame (a report, an event, ...) is queued or waiting for its ACK on the current link.
    public var hasUnacknowledgedMessages: Bool { firmware.hasUnacknowledgedMessages }
    /// Every settings fact of the firmware, in order: the oracle for the settings report's ACK (a version the
    /// device saw acknowledged must be the gateway's stored report).
    public private(set) var settingsFacts: [SettingsFact] = []

    init(
        configuration: DeviceConfiguration, adapterPath: DBusObjectPath, connection: DBusConnection,
        adapter: SimulatedAdapter, agents: SimulatedAgentManager, link: LinkModel, seed: UInt64
    ) {
        self.configuration = configuration
        path = DBusObjectPath(
            adapterPath.rawValue + "/dev_" + configuration.address.uppercased().replacingOccurrences(of: ":", with: "_"))
        self.connection = connection
        self.adapter = adapter
        self.agents = agents
        self.link = link
        random = SplitMix64(seed: seed)
        let profile = configuration.firmware.profile(serial: configuration.serial)
        firmware = DeviceModel(profile: profile, bootedAt: WallClock.now())
        services = TetherGattLayout.services(
            manufacturer: "Tether Labs", model: "Tether", serial: configuration.serial,
            firmware: profile.firmware.description
        ).filter { configuration.tetherService || $0.uuid != TetherGattLayout.tetherService }
    }

    var mtu: UInt16 { link.mtu }
    var isNotifying: Bool { !notifySessions.isEmpty }
    var isNotifyAcquired: Bool { notifySocket != nil }
    var isWriteAcquired: Bool { writeSocket != nil }

    // MARK: - Discovery

    /// The device advertised while discovery runs: exported (InterfacesAdded) the first time, otherwise an RSSI
    /// PropertiesChanged.
    func advertised() async {
        guard !isConnected else { return }
        let jitter = Int16.random(in: -3...3, using: &random)
        // 127 is HCI's "RSSI is not available" (Core 5.3 Vol 4 Part E 7.7.65.2): btvirt's emulated controllers
        // report it and bluetoothd publishes it unchanged as RSSI = 127, so a device configured that way shows
        // exactly 127, never a jittered neighbour of it.
        rssi = configuration.rssi == 127 ? 127 : configuration.rssi + jitter
        txPower = configuration.txPower
        if isExported {
            var changed: [String: DBusValue] = ["RSSI": .int16(rssi ?? configuration.rssi)]
            if let txPower { changed["TxPower"] = .int16(txPower) }
            emit(changed)
        } else {
            isExported = true
            try? await connection.objectServer.export([device1Interface()], at: path)
        }
    }

    /// Discovery stopped: RSSI and TxPower become invalid.
    func discoveryStopped() {
        guard isExported, rssi != nil || txPower != nil else { return }
        rssi = nil
        txPower = nil
        try? connection.objectServer.emitPropertiesChanged(
            path: path, interface: BlueZInterface.device, changed: [:], invalidated: ["RSSI", "TxPower"])
    }

    /// `Adapter1.RemoveDevice`: drop the link, the bond and every object (children first).
    func remove() async {
        removals += 1
        if isConnected { await dropLink(reason: ("org.bluez.Reason.Local", "Connection terminated by local host")) }
        unexportGatt()
        if isExported { connection.objectServer.unexport(path) }
        isExported = false
        isPaired = false
        trusted = false
        gapName = nil  // found again, it is a new device object with the advertised name
        rssi = nil
        txPower = nil
    }

    /// bluetoothd went away: forget everything silently (nothing is announced by a dead daemon). Calls in flight
    /// are dropped: they are answered NoReply once `answered` ends (at once when nil; see BlueZSimulator).
    func forgetForRestart(droppedCallsAnswered answered: Task<Void, Never>?) {
        bluetoothdLife += 1
        droppedCallsAnswered = answered
        connectWait?.cancel()
        pairing = false
        linkTask?.cancel()
        linkTask = nil
        closeSockets(announce: false)
        notifySessions.removeAll()
        if isConnected { firmware.disconnected(at: WallClock.now()) }
        isConnected = false
        servicesResolved = false
        connecting = false
        isExported = false
        gattExported = false
        rssi = nil
        txPower = nil
    }

    /// The new bluetoothd loads bonded devices from storage.
    func reloadIfBonded() async {
        guard isPaired, !isExported else { return }
        isExported = true
        try? await connection.objectServer.export([device1Interface()], at: path)
    }

    // MARK: - Connect, disconnect

    func connect() async throws {
        connectCalls += 1
        guard !isConnected else { return }
        guard await adapter.isPowered else { throw BlueZError.notReady }
        guard !connecting else { throw BlueZError.inProgress }
        connecting = true
        let life = bluetoothdLife
        defer { if life == bluetoothdLife { connecting = false } }
        // The adapter counts LE connection attempts in flight (BlueZ serialises them; the gateway must too).
        await adapter.connectAttemptStarted()
        let milliseconds = link.connectMilliseconds
        let wait = Task { _ = try? await Task.sleep(for: .milliseconds(milliseconds)) }
        connectWait = wait
        await wait.value  // or less: a restart cancels it
        await adapter.connectAttemptEnded()
        guard life == bluetoothdLife else { throw await droppedByRestart() }
        connectWait = nil
        if !pendingConnectFailures.isEmpty {
            throw pendingConnectFailures.removeFirst()
        }
        guard !isConnected else { return }
        linkUp()
    }

    func disconnect() async throws {
        disconnectCalls += 1
        guard isConnected else { throw BlueZError.notConnected }
        await dropLink(reason: ("org.bluez.Reason.Local", "Connection terminated by local host"))
    }

    /// The device (or a fault) ends the link.
    func remoteDisconnect() async {
        guard isConnected else { return }
        await dropLink(reason: ("org.bluez.Reason.Remote", "Connection terminated by remote user"))
    }

    /// The answer to a call the restart dropped. bluetoothd dies with the call unanswered, and dbus-daemon answers
    /// its caller for it: "org.freedesktop.DBus.Error.NoReply: Message recipient disconnected from message bus
    /// without replying" (bus/connection.c). Never a link: the new bluetoothd knows nothing of the call.
    private func droppedByRestart() async -> DBusError {
        await droppedCallsAnswered?.value
        return DBusError(.noReply, "Message recipient disconnected from message bus without replying")
    }

    /// The link is up: `Connected=true` now (before the caller's reply), services after the reply.
    private func linkUp() {
        isConnected = true
        connectionNumber += 1
        emit(["Connected": .bool(true)])
        firmware.connected(mtu: Int(link.mtu), at: WallClock.now())
        let number = connectionNumber
        linkTask = Task { [weak self] in await self?.runLink(number: number) }
        Task { [weak self] in await self?.resolveServices(number: number) }
    }

    private func resolveServices(number: UInt64) async {
        try? await Task.sleep(for: .milliseconds(link.serviceDiscoveryMilliseconds))
        guard isConnected, connectionNumber == number else { return }
        if !gattExported {
            gattExported = true
            await exportGatt()
        }
        guard isConnected, connectionNumber == number, !servicesResolved else { return }
        servicesResolved = true
        emit(["ServicesResolved": .bool(true)])
        nameAfterConnect()
    }

    /// bluetoothd reads the GAP Device Name (0x2A00) once connected and, when it differs from the name it has,
    /// takes it as the device's Name, and as its Alias while no alias was set (BlueZ profiles/gap/gas.c,
    /// read_device_name_cb → btd_device_device_set_name; src/device.c). The advertised name is gone from then on.
    private func nameAfterConnect() {
        let name = configuration.gapName ?? configuration.name
        guard name != currentName else { return }
        gapName = name
        emit(["Name": .string(name), "Alias": .string(name)])
    }

    /// Device1.Name and Alias: the advertised name until a connection read the GAP name.
    var currentName: String { gapName ?? configuration.name }

    private func dropLink(reason: (String, String)) async {
        linkTask?.cancel()
        linkTask = nil
        firmware.disconnected(at: WallClock.now())
        outbox.removeAll()
        closeSockets(announce: true)
        if !notifySessions.isEmpty {
            notifySessions.removeAll()
            emit(["Notifying": .bool(false)], at: txPath)
        }
        servicesResolved = false
        emit(["ServicesResolved": .bool(false)])
        try? connection.emitSignal(
            path: path, interface: BlueZInterface.device, member: "Disconnected",
            arguments: [.string(reason.0), .string(reason.1)])
        isConnected = false
        emit(["Connected": .bool(false)])
    }

    // MARK: - Pairing

    func pair(caller: String) async throws {
        guard !isPaired else { throw BlueZError.alreadyExists }
        guard !pairing else { throw BlueZError.inProgress }
        pairing = true
        pairingCanceled = false
        let life = bluetoothdLife
        defer { if life == bluetoothdLife { pairing = false } }
        if !isConnected {
            try await connect()
        }
        switch configuration.pairing {
        case .justWorks:
            break
        case .passkey:
            guard let agent = await agents.pairingAgent(for: caller) else { throw BlueZError.authenticationFailed }
            let reply = try await callAgent(agent, "RequestPasskey", [.objectPath(path)])
            guard reply.first?.uint32Value == configuration.passkey else { throw BlueZError.authenticationFailed }
        case .confirmation:
            guard let agent = await agents.pairingAgent(for: caller) else { throw BlueZError.authenticationFailed }
            _ = try await callAgent(agent, "RequestConfirmation", [.objectPath(path), .uint32(configuration.passkey)])
        }
        guard life == bluetoothdLife else { throw await droppedByRestart() }
        guard !pairingCanceled else { throw BlueZError.authenticationCanceled }
        isPaired = true
        emit(["Paired": .bool(true), "Bonded": .bool(true)])
    }

    func cancelPairing() throws {
        guard pairing else { throw BlueZError.doesNotExist }
        pairingCanceled = true
    }

    /// An agent's Rejected/Canceled becomes AuthenticationRejected/Canceled, anything else AuthenticationFailed.
    private func callAgent(_ agent: SimulatedAgentManager.Agent, _ member: String, _ arguments: [DBusValue])
        async throws -> [DBusValue]
    {
        do {
            return try await connection.call(
                destination: agent.owner, path: agent.path, interface: BlueZInterface.agent, member: member,
                arguments: arguments, timeout: .seconds(30))
        } catch let error as DBusError {
            switch error.name {
            case "org.bluez.Error.Rejected": throw BlueZError.authenticationRejected
            case "org.bluez.Error.Canceled": throw BlueZError.authenticationCanceled
            default: throw BlueZError.authenticationFailed
            }
        }
    }

    // MARK: - GATT operations

    func cachedValue(_ role: SimulatedGattCharacteristic.Role) -> [UInt8] {
        switch role {
        case .rx: []
        case .tx: txValue
        case .alertLevel: [alertLevel]
        case .fixed(let bytes): bytes
        }
    }

    /// ReadValue: like BlueZ, also announces the value as changed before replying.
    func readValue(_ role: SimulatedGattCharacteristic.Role, at characteristic: DBusObjectPath) throws -> [UInt8] {
        guard isConnected else { throw BlueZError.notConnected }
        let value: [UInt8]
        switch role {
        case .rx, .tx: throw BlueZError.notPermitted("Read not permitted")
        case .alertLevel: value = [alertLevel]
        case .fixed(let bytes): value = bytes
        }
        emit(["Value": .bytes(value)], at: characteristic, interface: BlueZInterface.gattCharacteristic)
        return value
    }

    func writeValue(_ role: SimulatedGattCharacteristic.Role, _ bytes: [UInt8], type: String?, flags: [String])
        throws
    {
        guard isConnected else { throw BlueZError.notConnected }
        // BlueZ picks Write Request unless the type is "command" or only write-without-response is allowed.
        let withResponse = type == "request" || (type == nil && flags.contains("write"))
        if withResponse ? !flags.contains("write") : !flags.contains("write-without-response") {
            throw BlueZError.notSupported
        }
        switch role {
        case .rx:
            deliverToFirmware(bytes)
        case .alertLevel:
            guard bytes.count == 1 else { throw BlueZError.failed("Operation failed with ATT error: 0x0d") }
            alertLevel = bytes[0]
        case .tx, .fixed:
            throw BlueZError.notPermitted("Write not permitted")
        }
    }

    func startNotify(sender: String) throws {
        startNotifyCalls += 1
        guard isConnected else { throw BlueZError.notConnected }
        guard notifySocket == nil else { throw BlueZError.notPermitted("Notify acquired") }
        guard !notifySessions.contains(sender) else { return }
        notifySessions.append(sender)
        if notifySessions.count == 1 { emit(["Notifying": .bool(true)], at: txPath) }
    }

    func stopNotify(sender: String) throws {
        guard let index = notifySessions.firstIndex(of: sender) else {
            throw BlueZError.failed("No notify session started")
        }
        notifySessions.remove(at: index)
        if notifySessions.isEmpty { emit(["Notifying": .bool(false)], at: txPath) }
    }

    /// The owner of StartNotify sessions left the bus.
    func clientVanished(_ name: String) {
        guard notifySessions.contains(name) else { return }
        try? stopNotify(sender: name)
    }

    func acquireNotify() throws -> (OwnedFileDescriptor, UInt16) {
        guard isConnected else { throw BlueZError.notConnected }
        if !pendingAcquireNotifyFailures.isEmpty { throw pendingAcquireNotifyFailures.removeFirst() }
        guard notifySocket == nil, notifySessions.isEmpty else { throw BlueZError.notPermitted("Notify acquired") }
        socketNumber += 1
        let (socket, clientEnd) = try SeqPacketSocket.makePair(id: socketNumber)
        notifySocket = socket
        emit(["NotifyAcquired": .bool(true)], at: txPath)
        watch(socket)
        return (clientEnd, link.mtu)
    }

    func acquireWrite() throws -> (OwnedFileDescriptor, UInt16) {
        guard isConnected else { throw BlueZError.notConnected }
        guard writeSocket == nil else { throw BlueZError.notPermitted("Write acquired") }
        socketNumber += 1
        let (socket, clientEnd) = try SeqPacketSocket.makePair(id: socketNumber)
        writeSocket = socket
        emit(["WriteAcquired": .bool(true)], at: rxPath)
        watch(socket)
        return (clientEnd, link.mtu)
    }

    func readDescriptor(_ role: SimulatedGattDescriptor.Role) throws -> [UInt8] {
        guard isConnected else { throw BlueZError.notConnected }
        return descriptorValue(role)
    }

    func descriptorValue(_ role: SimulatedGattDescriptor.Role) -> [UInt8] {
        switch role {
        case .clientConfiguration: (isNotifying || isNotifyAcquired) ? [0x01, 0x00] : [0x00, 0x00]
        case .fixed(let bytes): bytes
        }
    }

    // MARK: - Firmware and link

    /// Control surface: the user takes `count` hits.
    func recordHits(_ count: Int) -> Int {
        var recorded = 0
        for index in 0..<count {
            let now = WallClock.now()
            let (event, actions) = firmware.recordHit(
                durationMilliseconds: UInt16(800 + index % 1200), intensity: UInt8(40 + index % 60), at: now)
            if event != nil { recorded += 1 }
            apply(actions)
        }
        return recorded
    }

    /// Power cycle: the firmware reboots and a live link drops (remote side).
    func reboot() async {
        firmware.reboot(at: WallClock.now())
        if isConnected { await dropLink(reason: ("org.bluez.Reason.Remote", "Connection terminated by remote user")) }
    }

    func failNextConnects(with error: DBusError, count: Int) {
        pendingConnectFailures += Array(repeating: error, count: max(count, 0))
    }

    func failNextAcquireNotifies(with error: DBusError, count: Int) {
        pendingAcquireNotifyFailures += Array(repeating: error, count: max(count, 0))
    }

    private func deliverToFirmware(_ bytes: [UInt8]) {
        writesReceived += 1
        apply(firmware.received(bytes, at: WallClock.now()))
    }

    private func apply(_ actions: [DeviceAction]) {
        for action in actions {
            switch action {
            case .notify(let value): outbox.append(value)
            case .disconnect: Task { await self.remoteDisconnect() }
            case .released(let events): releasedEvents += events
            case .settings(let fact): settingsFacts.append(fact)
            }
        }
    }

    /// One connection event per interval (LinkModel): the firmware timer, the random-disconnect fault, and up to
    /// `notificationsPerEvent` notifications.
    private func runLink(number: UInt64) async {
        let interval = link.connectionInterval
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            guard !Task.isCancelled, isConnected, connectionNumber == number else { return }
            await connectionEvent(interval: interval)
        }
    }

    private func connectionEvent(interval: Duration) async {
        let now = WallClock.now()
        if let deadline = firmware.nextDeadline, deadline <= now {
            apply(firmware.handleTimeout(at: now))
        }
        if randomDisconnectMeanMilliseconds > 0 {
            let p = Double(interval.nanoseconds) / (Double(randomDisconnectMeanMilliseconds) * 1e6)
            if random.chance(p) {
                await remoteDisconnect()
                return
            }
        }
        let count = link.unthrottled ? outbox.count : min(outbox.count, max(link.notificationsPerEvent, 1))
        let batch = outbox.prefix(count)
        outbox.removeFirst(count)
        for value in batch {
            if random.chance(dropProbability) {
                notificationsDropped += 1
                continue
            }
            sendNotification(value)
            if random.chance(duplicateProbability) { sendNotification(value) }
        }
    }

    /// Benchmark stream: `count` HIT_EVENT frames (valid link-protocol frames, one per notification, sequence
    /// numbers counting up) straight to the subscribers, bypassing the firmware. Throttled by the link model
    /// unless it is `unthrottled`; then an AcquireNotify socket that is full is waited for (nothing is dropped)
    /// and the bus is given a turn every 64 notifications. Returns how many were sent.
    func streamNotifications(_ count: Int) async -> Int {
        guard isConnected, notifySocket != nil || !notifySessions.isEmpty else { return 0 }
        var sent = 0
        for index in 0..<count {
            let hit = HitEvent(
                eventSequence: UInt32(truncatingIfNeeded: index), bootCounter: 1, ticks: UInt32(truncatingIfNeeded: index * 32),
                durationMilliseconds: 900, intensity: 50)
            let value = LinkMessage.hitEvent(hit).frame(version: 1, sequence: SequenceNumber(UInt16(truncatingIfNeeded: index)))
            guard link.unthrottled else {
                outbox.append(value)
                sent += 1
                continue
            }
            txValue = value
            if let socket = notifySocket {
                while !socket.send(value) {
                    guard isConnected, notifySocket === socket, socket.isWritableSoon() else { return sent }
                    await Task.yield()
                }
            }
            for _ in notifySessions {
                emit(["Value": .bytes(value)], at: txPath, interface: BlueZInterface.gattCharacteristic)
            }
            notificationsSent += 1
            sent += 1
            if index % 64 == 63 { await Task.yield() }
        }
        return sent
    }

    /// To the AcquireNotify socket (one packet per notification) and as Value PropertiesChanged, once per
    /// StartNotify session. With neither, the CCCD is off and the device's notification goes nowhere.
    private func sendNotification(_ value: [UInt8]) {
        txValue = value
        notifySocket?.send(value)
        for _ in notifySessions {
            emit(["Value": .bytes(value)], at: txPath, interface: BlueZInterface.gattCharacteristic)
        }
        if notifySocket != nil || !notifySessions.isEmpty { notificationsSent += 1 }
    }

    private func watch(_ socket: SeqPacketSocket) {
        Task { [weak self] in
            for await event in socket.events {
                switch event {
                case .packet(let bytes): await self?.socketPacket(bytes, from: socket.id)
                case .closed: await self?.socketClosed(socket.id)
                }
            }
        }
    }

    private func socketPacket(_ bytes: [UInt8], from id: UInt64) {
        guard writeSocket?.id == id, isConnected else { return }
        deliverToFirmware(bytes)
    }

    private func socketClosed(_ id: UInt64) {
        if notifySocket?.id == id {
            notifySocket = nil
            emit(["NotifyAcquired": .bool(false)], at: txPath)
        } else if writeSocket?.id == id {
            writeSocket = nil
            emit(["WriteAcquired": .bool(false)], at: rxPath)
        }
    }

    private func closeSockets(announce: Bool) {
        if let socket = notifySocket {
            socket.shutDown()
            notifySocket = nil
            if announce { emit(["NotifyAcquired": .bool(false)], at: txPath) }
        }
        if let socket = writeSocket {
            socket.shutDown()
            writeSocket = nil
            if announce { emit(["WriteAcquired": .bool(false)], at: rxPath) }
        }
    }

    // MARK: - Objects

    private var txPath: DBusObjectPath { characteristicPath(role: .tx) }
    private var rxPath: DBusObjectPath { characteristicPath(role: .rx) }

    private func characteristicPath(role: SimulatedGattCharacteristic.Role) -> DBusObjectPath {
        for service in services {
            for characteristic in service.characteristics where characteristic.role == role {
                return characteristic.path(under: service.path(under: path))
            }
        }
        return path
    }

    /// Parent first: each service, then its characteristics, each followed by its descriptors.
    private func exportGatt() async {
        for service in services {
            let servicePath = service.path(under: path)
            try? await connection.objectServer.export([service.interface(device: path)], at: servicePath)
            for characteristic in service.characteristics {
                let characteristicPath = characteristic.path(under: servicePath)
                try? await connection.objectServer.export(
                    [characteristic.interface(service: servicePath, path: characteristicPath, device: self)],
                    at: characteristicPath)
                for descriptor in characteristic.descriptors {
                    try? await connection.objectServer.export(
                        [descriptor.interface(characteristic: characteristicPath, device: self)],
                        at: descriptor.path(under: characteristicPath))
                }
            }
        }
    }

    private func unexportGatt() {
        guard gattExported else { return }
        gattExported = false
        for service in services.reversed() {
            let servicePath = service.path(under: path)
            for characteristic in service.characteristics.reversed() {
                let characteristicPath = characteristic.path(under: servicePath)
                for descriptor in characteristic.descriptors.reversed() {
                    connection.objectServer.unexport(descriptor.path(under: characteristicPath))
                }
                connection.objectServer.unexport(characteristicPath)
            }
            connection.objectServer.unexport(servicePath)
        }
    }

    private func emit(
        _ changed: [String: DBusValue], at objectPath: DBusObjectPath? = nil, interface: String? = nil
    ) {
        let target = objectPath ?? path
        let name = interface ?? (objectPath == nil ? BlueZInterface.device : BlueZInterface.gattCharacteristic)
        try? connection.objectServer.emitPropertiesChanged(path: target, interface: name, changed: changed)
    }

    // MARK: - Device1 properties

    fileprivate func snapshot() -> Device1Snapshot {
        Device1Snapshot(
            rssi: rssi, txPower: txPower, connected: isConnected, servicesResolved: servicesResolved,
            paired: isPaired, trusted: trusted, blocked: blocked)
    }

    fileprivate func setTrusted(_ value: Bool) {
        guard trusted != value else { return }
        trusted = value
        emit(["Trusted": .bool(value)])
    }

    fileprivate func setBlocked(_ value: Bool) async {
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
                    .strings(configuration.tetherService ? [TetherGattLayout.tetherService] : [TetherGattLayout.deviceInformationService])
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
