import DBus
import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherPrimitives

/// Connect, disconnect and pairing, in BlueZ's signal order (bluez-dbus-facts.md).
extension SimulatedDevice {
    // MARK: - Connect, disconnect

    func connect() async throws {
        connectCalls += 1
        guard !isConnected else { return }
        guard await adapter.isPowered else { throw BlueZError.notReady }
        guard !connecting else { throw BlueZError.inProgress }
        connecting = true
        let life = bluetoothdLife
        let removalsAtStart = removals
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
        // RemoveDevice while this Connect waited: bluetoothd aborts the connection attempt with the device
        // (src/device.c device_remove → the pending connect fails). A link brought up now would belong to no
        // object and never be torn down: the device would stay "connected", never advertise and never be found
        // again (seen in GatewaySoakTests: removals=1, paired=false, not exported, 250 connects on a missing path).
        guard removals == removalsAtStart else { throw BlueZError.failed("le-connection-abort-by-local") }
        if !pendingConnectFailures.isEmpty {
            throw pendingConnectFailures.removeFirst()
        }
        guard !isConnected else { return }
        linkUp()
        try await healthLinkUp()
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
    func droppedByRestart() async -> DBusError {
        await droppedCallsAnswered?.value
        return DBusError(.noReply, "Message recipient disconnected from message bus without replying")
    }

    /// The link is up: `Connected=true` now (before the caller's reply), services after the reply.
    func linkUp() {
        isConnected = true
        connectionNumber += 1
        emit(["Connected": .bool(true)])
        firmware.connected(mtu: Int(link.mtu), at: WallClock.now())
        let number = connectionNumber
        linkTask = Task { [weak self] in await self?.runLink(number: number) }
        Task { [weak self] in await self?.resolveServices(number: number) }
    }

    func resolveServices(number: UInt64) async {
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
    func nameAfterConnect() {
        let name = configuration.gapName ?? configuration.name
        guard name != currentName else { return }
        gapName = name
        emit(["Name": .string(name), "Alias": .string(name)])
    }

    /// Device1.Name and Alias: the advertised name until a connection read the GAP name.
    var currentName: String { gapName ?? configuration.name }

    func dropLink(reason: (String, String)) async {
        linkTask?.cancel()
        linkTask = nil
        firmware.disconnected(at: WallClock.now())
        outbox.removeAll()
        closeSockets(announce: true)
        healthLinkDown()
        smpLinkDown(announce: true)
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
        healthPaired()
        emit(["Paired": .bool(true), "Bonded": .bool(true)])
    }

    func cancelPairing() throws {
        guard pairing else { throw BlueZError.doesNotExist }
        pairingCanceled = true
    }

    /// An agent's Rejected/Canceled becomes AuthenticationRejected/Canceled, anything else AuthenticationFailed.
    func callAgent(_ agent: SimulatedAgentManager.Agent, _ member: String, _ arguments: [DBusValue])
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
}
