import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import MCUbootImage
import SMPDeviceModel
import TetherTestSupport

/// tether-sim (in this process) on a private dbus-daemon with one device offering MCUmgr's SMP GATT service, running
/// the committed imgtool fixture ed25519-hash.img (-v 1.2.3+4): the real part Tether's SMP BLE transport talks to.
enum SimulatedSMPOverBLE {
    static let address = "C0:54:45:00:00:07"
    static let path = SimulatedBlueZ.devicePath(address)
    static var factoryPath: String { SimulatedDevice.fixtures.appendingPathComponent("ed25519-hash.img").path }

    /// Runs `body` with the simulator up and the device connected (Device1.Connect, services resolved).
    static func with<Result>(
        bufSize: Int = 512, bufCount: Int = 4, reassembly: Bool = true, mtu: UInt16 = 247,
        _ body: (SimulatedBlueZ, BlueZSession) async throws -> Result
    ) async throws -> Result {
        var device = DeviceConfiguration(address: address)
        device.name = "Tether-SMP"
        device.smp = SMPServiceConfiguration(image: factoryPath, bufSize: bufSize, bufCount: bufCount, reassembly: reassembly)
        var configuration = SimulatorConfiguration(devices: [device], seed: 16)
        configuration.link.mtu = mtu
        return try await SimulatedBlueZ.with(configuration) { simulated in
            let bluez = BlueZSession(connection: simulated.connection)
            try await discover(bluez)
            try await connect(bluez)
            return try await body(simulated, bluez)
        }
    }

    /// BlueZ exports a device once discovery has seen it advertise: discover until it is there (bounded).
    static func discover(_ bluez: BlueZSession) async throws {
        let adapter = Adapter(session: bluez)
        try await adapter.startDiscovery()
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? await Device(session: bluez, path: path).properties()) == nil {
            guard ContinuousClock.now < deadline else { throw NotDiscovered() }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await adapter.stopDiscovery()
    }

    struct NotDiscovered: Error {}

    static func connect(_ bluez: BlueZSession) async throws {
        let device = Device(session: bluez, path: path)
        try await device.connect(timeout: .seconds(10))
        try await device.waitUntilServicesResolved(timeout: .seconds(10))
    }

    static func model(_ simulated: SimulatedBlueZ) async throws -> SMPDevice {
        guard let device = await simulated.simulator.device(at: path), let model = await device.smpDevice else { throw NoSMPDevice() }
        return model
    }

    static func server(_ simulated: SimulatedBlueZ) async throws -> SMPBluetoothServer {
        guard let device = await simulated.simulator.device(at: path), let server = await device.smp else { throw NoSMPDevice() }
        return server
    }

    static func statistic(_ name: String, _ simulated: SimulatedBlueZ) async throws -> Int {
        Int(try await simulated.statistics(address)[name]?.uint32Value ?? 0)
    }

    struct NoSMPDevice: Error {}

    /// An image imgtool signs now with the fixtures' Ed25519 key (trusted/ed25519.pem verifies it): `bodySize` bytes
    /// of body, version 3.1.4+1.
    static func signedImage(bodySize: Int) async throws -> [UInt8] {
        let imgtool = try await PinnedPythonTools.tool("imgtool-venv.sh")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("smp-ble-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = directory.appendingPathComponent("body.bin")
        try Data((0..<bodySize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 11) }).write(to: body)
        let image = directory.appendingPathComponent("new.img")
        let signed = try await ChildProcess.run(
            imgtool,
            [
                "sign", "--slot-size", "0x60000", "-k", SimulatedDevice.fixtures.appendingPathComponent("keys/ed25519.pem").path, "-H",
                "0x200", "--pad-header", "-v", "3.1.4+1", body.path, image.path,
            ], timeout: .seconds(120))
        guard signed.status == 0 else { throw ImgtoolFailed(message: signed.standardError) }
        return [UInt8](try Data(contentsOf: image))
    }

    struct ImgtoolFailed: Error { var message: String }
}
