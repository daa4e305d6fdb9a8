import DBus
import HealthDeviceModel
import TetherDeviceModel
import Foundation
import LinkProtocol
import SMPDeviceModel
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
    let connection: DBusConnection
    let adapter: SimulatedAdapter
    let agents: SimulatedAgentManager
    let link: LinkModel
    var random: SplitMix64
    /// Where released events are recorded outside the simulator (`SimulatorConfiguration.releasedLog`), if anywhere.
    let releasedLog: ReleasedEventLog?

    // Device1 state.
    internal(set) var isExported = false
    var gattExported = false
    var rssi: Int16?
    var txPower: Int16?
    internal(set) var isConnected = false
    var servicesResolved = false
    internal(set) var isPaired = false
    var trusted = false
    var blocked = false
    var connecting = false
    var pairing = false
    var pairingCanceled = false
    /// What bluetoothd read from the GAP Device Name characteristic on connecting (nil before the first
    /// connection): Name and Alias from then on (`nameAfterConnect`).
    var gapName: String?

    // bluetoothd restarts (`forgetForRestart`): a Connect or Pair that began under an earlier bluetoothd was dropped
    // with it and is answered with the bus's NoReply (`droppedByRestart`), never with a link.
    var bluetoothdLife: UInt64 = 0
    var connectWait: Task<Void, Never>?
    var droppedCallsAnswered: Task<Void, Never>?

    // The link.
    var firmware: DeviceModel
    var outbox: [[UInt8]] = []
    var linkTask: Task<Void, Never>?
    var connectionNumber: UInt64 = 0
    var notifySessions: [String] = []
    var notifySocket: SeqPacketSocket?
    var writeSocket: SeqPacketSocket?
    var socketNumber: UInt64 = 0
    var txValue: [UInt8] = []
    var alertLevel: UInt8 = 0

    // A standard health device (configuration.health): its model, and per characteristic (16-bit UUID) the
    // StartNotify sessions, the AcquireNotify socket and the last value (SimulatedDevice+Health).
    var health: HealthDevice?
    var healthNotifySessions: [UInt16: [String]] = [:]
    var healthNotifySockets: [UInt16: SeqPacketSocket] = [:]
    var healthValues: [UInt16: [UInt8]] = [:]
    /// Every health value the device sent, in order, with its delivery: the oracle for tests and the btsnoop writer.
    public internal(set) var healthTransmissions: [HealthTransmission] = []
    /// Every write the health device accepted (its clock set by Current Time, RACP requests…), in order: the
    /// oracle for the time-write tests.
    public internal(set) var healthWrites: [HealthWrite] = []

    // The MCUmgr SMP service (configuration.smp; SimulatedDevice+SMP): Zephyr's Bluetooth transport in front of the
    // SMPDevice model, the characteristic's StartNotify sessions and acquired sockets, its notifications waiting for
    // a connection event, and the last value.
    public internal(set) var smp: SMPBluetoothServer?
    var smpNotifySessions: [String] = []
    var smpNotifySocket: SeqPacketSocket?
    var smpWriteSocket: SeqPacketSocket?
    var smpOutbox: [[UInt8]] = []
    var smpValue: [UInt8] = []
    /// The device rebooted after a reset command: the link drops once the reset's answer is out (rule 6).
    var smpRebootPending = false
    /// The gateway's SMP writes not yet carried over the air: a connection event carries up to
    /// `LinkModel.notificationsPerEvent` of them to the device (LinkModel).
    var smpInbox: [[UInt8]] = []
    /// While the device's flash is busy with a request (`SMPDevice.lastBusyTime`): its answer and whether it
    /// rebooted, released at `until`. Writes wait in `smpInbox` meanwhile: Zephyr's SMP work handler runs one
    /// request at a time (smp.c `smp_handle_reqs`).
    var smpBusy: (until: ContinuousClock.Instant, notifications: [[UInt8]], rebooted: Bool)?

    // Faults (see SimulatorControl).
    var pendingConnectFailures: [DBusError] = []
    var pendingAcquireNotifyFailures: [DBusError] = []
    /// Health characteristics whose next subscriptions fail slowly (`health-subscribe-failure`): how many, and how
    /// long each takes to fail.
    var pendingHealthSubscribeFailures: [UInt16: (count: Int, delay: Duration)] = [:]
    var dropProbability = 0.0
    var duplicateProbability = 0.0
    var randomDisconnectMeanMilliseconds: UInt32 = 0

    /// Statistics for tests.
    public internal(set) var notificationsSent = 0
    public internal(set) var writesReceived = 0
    /// Notifications the drop-notifications fault took instead of sending.
    public internal(set) var notificationsDropped = 0
    /// `Device1.Connect` / `Device1.Disconnect` calls and `StartNotify` sessions started on TX, for the gateway's
    /// supervisor and notify-method tests.
    public internal(set) var connectCalls = 0
    public internal(set) var disconnectCalls = 0
    public internal(set) var startNotifyCalls = 0
    /// `Adapter1.RemoveDevice` calls that removed this device.
    public internal(set) var removals = 0
    /// Every event the firmware forgot because the gateway acknowledged it, in order: the oracle for
    /// ACK-after-commit (each of them must be in the gateway's database).
    public internal(set) var releasedEvents: [HitEvent] = []
    /// Events still in the device's flash, waiting for an ACK.
    public var unacknowledgedEvents: Int { firmware.eventStore.count }
    /// The settings the device holds (§7.11).
    public var config: DeviceConfig { firmware.config }
    /// Whether a reliable frame (a report, an event, ...) is queued or waiting for its ACK on the current link.
    public var hasUnacknowledgedMessages: Bool { firmware.hasUnacknowledgedMessages }
    /// Every settings fact of the firmware, in order: the oracle for the settings report's ACK (a version the
    /// device saw acknowledged must be the gateway's stored report).
    public internal(set) var settingsFacts: [SettingsFact] = []

    init(
        configuration: DeviceConfiguration, adapterPath: DBusObjectPath, connection: DBusConnection,
        adapter: SimulatedAdapter, agents: SimulatedAgentManager, link: LinkModel, seed: UInt64,
        releasedLog: ReleasedEventLog? = nil, smp: SMPBluetoothServer? = nil
    ) {
        self.configuration = configuration
        path = DBusObjectPath(
            adapterPath.rawValue + "/dev_" + configuration.address.uppercased().replacingOccurrences(of: ":", with: "_"))
        self.connection = connection
        self.adapter = adapter
        self.agents = agents
        self.link = link
        random = SplitMix64(seed: seed)
        self.releasedLog = releasedLog
        isPaired = configuration.bonded
        trusted = configuration.bonded
        let profile = configuration.firmware.profile(serial: configuration.serial)
        firmware = DeviceModel(profile: profile, bootCounter: configuration.bootCounter, bootedAt: WallClock.now())
        var layout: [SimulatedGattService]
        if let settings = configuration.health {
            var seeded = settings
            seeded.seed = settings.seed ^ seed
            var model = HealthDevice(settings: seeded, serial: configuration.serial, now: WallClock.now())
            if configuration.bonded { model.rememberBond() }
            health = model
            layout = HealthGattMapping.services(model.services)
        } else {
            layout = TetherGattLayout.services(
                manufacturer: "Tether Labs", model: "Tether", serial: configuration.serial,
                firmware: profile.firmware.description
            ).filter { configuration.tetherService || $0.uuid != TetherGattLayout.tetherService }
        }
        self.smp = smp
        if smp != nil { layout.append(SMPGattLayout.service(after: layout)) }
        services = layout
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
        connectWait?.cancel()  // a Connect waiting for its link is aborted (see `connect`)
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
        smpLinkDown(announce: false)
        notifySessions.removeAll()
        if isConnected { health?.disconnected() }
        for socket in healthNotifySockets.values { socket.shutDown() }
        healthNotifySockets.removeAll()
        healthNotifySessions.removeAll()
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
        // What the bus has, not what the flag says: the restart unexported every path, and work of the old daemon
        // that was under way when it died (an advertisement) may have set the flag after `forgetForRestart`.
        isExported = connection.objectServer.exportedPaths.contains(path)
        guard isPaired, !isExported else { return }
        isExported = true
        try? await connection.objectServer.export([device1Interface()], at: path)
    }

}

/// A write a simulated health device accepted: the characteristic's 16-bit UUID and the bytes.
public struct HealthWrite: Hashable, Sendable {
    public var characteristic: UInt16
    public var bytes: [UInt8]
}
