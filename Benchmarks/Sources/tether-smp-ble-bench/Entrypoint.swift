import BlueZ
import Crypto
import DBus
import Foundation
import SMP
import TetherFirmware

/// One image upload by Tether's own SMP BLE transport (`SMPBluetoothSession` driving `ImageUploader`) to a device on
/// the bus at ADDRESS (tether-sim's simulated MCUmgr device in scripts/bench/smp-ble-throughput.sh): discover,
/// connect, open the session (AcquireNotify/AcquireWrite, MTU from BlueZ), then time the upload alone, from its
/// first request to the last answer, as the script times smpclient's. Prints one JSON object.
///
///     tether-smp-ble-bench BUS_ADDRESS DEVICE_ADDRESS IMAGE [--reassembly]
///
/// `--reassembly` says the device joins a request's writes (Zephyr's CONFIG_MCUMGR_TRANSPORT_BT_REASSEMBLY): requests
/// up to `buf_size` and up to `buf_count - 1` of them in flight. Without it, one request per write and one at a time.
@main
enum Entrypoint {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let flags = Set(arguments.filter { $0.hasPrefix("--") })
        let positional = arguments.filter { !$0.hasPrefix("--") }
        guard positional.count == 3, flags.isSubset(of: ["--reassembly"]) else {
            FileHandle.standardError.write(Data("usage: tether-smp-ble-bench BUS_ADDRESS DEVICE_ADDRESS IMAGE [--reassembly]\n".utf8))
            exit(2)
        }
        do {
            print(try await run(bus: positional[0], address: positional[1], imagePath: positional[2], reassembly: flags.contains("--reassembly")))
        } catch {
            FileHandle.standardError.write(Data("tether-smp-ble-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(bus: String, address: String, imagePath: String, reassembly: Bool) async throws -> String {
        let image = [UInt8](try Data(contentsOf: URL(fileURLWithPath: imagePath)))
        let connection = try await DBusConnection.connect(to: .address(bus))
        let bluez = BlueZSession(connection: connection)
        let path = DBusObjectPath("/org/bluez/hci0/dev_" + address.uppercased().replacingOccurrences(of: ":", with: "_"))
        // tether-sim, as bluetoothd, exports a device once discovery has seen it advertise.
        let adapter = Adapter(session: bluez)
        try await adapter.startDiscovery()
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? await Device(session: bluez, path: path).properties()) == nil {
            guard ContinuousClock.now < deadline else { throw BenchFailure("\(address) was not discovered within 20 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await adapter.stopDiscovery()
        let device = Device(session: bluez, path: path)
        try await device.connect(timeout: .seconds(20))
        try await device.waitUntilServicesResolved(timeout: .seconds(20))

        var settings = SMPBluetoothSession.Settings()
        settings.deviceReassembles = reassembly
        let session = try await SMPBluetoothSession.open(bluez: bluez, device: path, settings: settings)
        defer { session.close() }
        var uploader = ImageUploader(image: image, sha256: Array(SHA256.hash(data: image)), configuration: session.uploaderConfiguration())
        var writes = 0
        var parameters: SMPParameters?
        let started = ContinuousClock.now
        try await session.drive(&uploader) { order in
            switch order {
            case .write: writes += 1
            case .parameters(let read): parameters = read
            case .progress, .finished, .failed: break
            }
        }
        let elapsed = started.duration(to: .now)
        guard uploader.isFinished else { throw BenchFailure("the upload did not finish") }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let fields: [String] = [
            "\"seconds\": \(seconds)", "\"bytes\": \(image.count)", "\"writeSize\": \(session.writeLimit)", "\"mtu\": \(session.mtu)",
            "\"writes\": \(writes)",
            "\"bufSize\": \(parameters.map { String($0.bufferSize) } ?? "null")", "\"bufCount\": \(parameters.map { String($0.bufferCount) } ?? "null")",
        ]
        return "{" + fields.joined(separator: ", ") + "}"
    }

    struct BenchFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
