import DBus
import Foundation

/// `org.bluez.Adapter1` at `/org/bluez/hci0`: power, discovery (devices appear while it runs) and RemoveDevice.
public actor SimulatedAdapter {
    public nonisolated let path = DBusObjectPath("/org/bluez/hci0")
    nonisolated let address: String
    nonisolated let name: String
    private let connection: DBusConnection
    private(set) var devices: [SimulatedDevice] = []
    private(set) var isPowered = true
    private var discoveryClients: [String] = []
    private var advertisingTask: Task<Void, Never>?
    private var discoverable = false
    private var pairable = true
    private var connectAttemptsInFlight = 0
    /// The most LE connection attempts (`Device1.Connect` calls past their checks) ever in flight at once on this
    /// adapter: BlueZ answers a second one with InProgress, so the gateway's supervisor keeps it at 1.
    public private(set) var connectAttemptsInFlightPeak = 0

    init(address: String, name: String, connection: DBusConnection) {
        self.address = address
        self.name = name
        self.connection = connection
    }

    func attach(_ devices: [SimulatedDevice]) {
        self.devices = devices
    }

    var isDiscovering: Bool { !discoveryClients.isEmpty }

    func device(at path: DBusObjectPath) -> SimulatedDevice? {
        devices.first { $0.path == path }
    }

    func connectAttemptStarted() {
        connectAttemptsInFlight += 1
        connectAttemptsInFlightPeak = max(connectAttemptsInFlightPeak, connectAttemptsInFlight)
    }

    func connectAttemptEnded() {
        connectAttemptsInFlight -= 1
    }

    // MARK: Discovery

    func startDiscovery(sender: String) async throws {
        guard isPowered else { throw BlueZError.notReady }
        guard !discoveryClients.contains(sender) else { throw BlueZError.inProgress }
        discoveryClients.append(sender)
        guard discoveryClients.count == 1 else { return }
        emit(["Discovering": .bool(true)])
        // Every advertiser shows up at once, then keeps advertising (RSSI updates) about once a second.
        advertisingTask = Task { [weak self] in
            while !Task.isCancelled {
                guard let devices = await self?.devices else { return }
                for device in devices {
                    guard !Task.isCancelled else { return }
                    await device.advertised()
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    func stopDiscovery(sender: String) async throws {
        guard let index = discoveryClients.firstIndex(of: sender) else {
            throw BlueZError.failed("No discovery started")
        }
        discoveryClients.remove(at: index)
        if discoveryClients.isEmpty { await endDiscovery() }
    }

    /// A discovery client left the bus.
    func clientVanished(_ name: String) async {
        guard discoveryClients.contains(name) else { return }
        try? await stopDiscovery(sender: name)
    }

    private func endDiscovery() async {
        advertisingTask?.cancel()
        advertisingTask = nil
        emit(["Discovering": .bool(false)])
        for device in devices { await device.discoveryStopped() }
    }

    func removeDevice(_ path: DBusObjectPath) async throws {
        guard let device = device(at: path), await device.isExported else { throw BlueZError.doesNotExist }
        await device.remove()
    }

    // MARK: Power

    func setPowered(_ value: Bool) async {
        guard value != isPowered else { return }
        if !value {
            if isDiscovering {
                discoveryClients.removeAll()
                await endDiscovery()
            }
            for device in devices { await device.remoteDisconnect() }
        }
        isPowered = value
        emit(["Powered": .bool(value), "PowerState": .string(value ? "on" : "off")])
    }

    /// bluetoothd restarted: discovery and power state start afresh.
    func forgetForRestart(droppedCallsAnswered: Task<Void, Never>?) async {
        advertisingTask?.cancel()
        advertisingTask = nil
        discoveryClients.removeAll()
        isPowered = true
        for device in devices { await device.forgetForRestart(droppedCallsAnswered: droppedCallsAnswered) }
    }

    private func emit(_ changed: [String: DBusValue]) {
        try? connection.objectServer.emitPropertiesChanged(
            path: path, interface: BlueZInterface.adapter, changed: changed)
    }

    private func setDiscoverable(_ value: Bool) {
        discoverable = value
        emit(["Discoverable": .bool(value)])
    }

    private func setPairable(_ value: Bool) {
        pairable = value
        emit(["Pairable": .bool(value)])
    }

    private func state() -> (powered: Bool, discovering: Bool, discoverable: Bool, pairable: Bool) {
        (isPowered, isDiscovering, discoverable, pairable)
    }

    nonisolated func interface() -> DBusInterface {
        let address = address
        let name = name
        return DBusInterface(
            name: BlueZInterface.adapter,
            methods: [
                DBusMethod("StartDiscovery") { call in
                    try await self.startDiscovery(sender: call.sender)
                    return []
                },
                DBusMethod("StopDiscovery") { call in
                    try await self.stopDiscovery(sender: call.sender)
                    return []
                },
                DBusMethod("SetDiscoveryFilter", inputs: [DBusArgument("filter", "a{sv}")]) { _ in [] },
                DBusMethod("GetDiscoveryFilters", outputs: [DBusArgument("filters", "as")]) { _ in
                    [.strings(["UUIDs", "RSSI", "Pathloss", "Transport", "DuplicateData", "Discoverable", "Pattern"])]
                },
                DBusMethod("RemoveDevice", inputs: [DBusArgument("device", "o")]) { call in
                    guard let path = call.arguments[0].objectPathValue else { throw BlueZError.invalidArguments }
                    try await self.removeDevice(path)
                    return []
                },
            ],
            properties: [
                DBusProperty("Address", signature: "s") { .string(address) },
                DBusProperty("AddressType", signature: "s") { .string("public") },
                DBusProperty("Name", signature: "s") { .string(name) },
                DBusProperty("Alias", signature: "s") { .string(name) },
                DBusProperty("Class", signature: "u") { .uint32(0) },
                DBusProperty(
                    "Powered", signature: "b", getter: { .bool(await self.state().powered) },
                    setter: { value in await self.setPowered(value.boolValue ?? false) }),
                DBusProperty("PowerState", signature: "s") { .string(await self.state().powered ? "on" : "off") },
                DBusProperty(
                    "Discoverable", signature: "b", getter: { .bool(await self.state().discoverable) },
                    setter: { value in await self.setDiscoverable(value.boolValue ?? false) }),
                DBusProperty("DiscoverableTimeout", signature: "u") { .uint32(180) },
                DBusProperty(
                    "Pairable", signature: "b", getter: { .bool(await self.state().pairable) },
                    setter: { value in await self.setPairable(value.boolValue ?? false) }),
                DBusProperty("PairableTimeout", signature: "u") { .uint32(0) },
                DBusProperty("Discovering", signature: "b") { .bool(await self.state().discovering) },
                DBusProperty("UUIDs", signature: "as") { .strings([]) },
                DBusProperty("Modalias", signature: "s") { .string("usb:v1D6Bp0246d0542") },
                DBusProperty("Roles", signature: "as") { .strings(["central", "peripheral"]) },
            ])
    }
}
