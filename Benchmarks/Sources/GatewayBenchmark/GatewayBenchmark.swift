import BlueZ
import DBus
import Foundation
import LinkProtocol
import Synchronization
import TetherGateway

/// `tether-gateway-bench`: notifications/s and CPU per notification from N simulated devices through
/// dbus-daemon, received (1) by Tether over StartNotify, (2) by Tether over AcquireNotify, (3) by bleak
/// (pinned, default StartNotify) — the same tether-sim stream on the same bus, in one run.
///
/// Tether's receiver does what the gateway's session does first with every notification: reassemble frames
/// (`FrameDecoder`) and parse the message (`LinkMessage`); bleak's receiver only counts in its callback.
/// The simulator runs as a separate process (`tether-sim --unthrottled`), so each CPU figure is the receiver's.
public enum GatewayBenchmark {
    struct Options {
        var devices = 4
        var startNotifyPerDevice = 10_000
        var acquirePerDevice = 50_000
        var simulator = ""
        var bleakPython: String?
        var bleakScript = ""
        var coalescingMicroseconds = 1000
    }

    struct Measurement {
        let name: String
        let received: Int
        let expected: Int
        let seconds: Double
        let cpuSeconds: Double

        var rate: Double { seconds > 0 ? Double(received) / seconds : 0 }
        var cpuMicrosecondsPerNotification: Double { received > 0 ? cpuSeconds / Double(received) * 1e6 : 0 }
    }

    public static func main(arguments: [String]) async throws {
        var options = Options()
        let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        options.simulator = executableDirectory + "/tether-sim"
        var index = 0
        while index < arguments.count {
            let value = index + 1 < arguments.count ? arguments[index + 1] : ""
            switch arguments[index] {
            case "--devices": options.devices = Int(value) ?? options.devices
            case "--start-notify-per-device": options.startNotifyPerDevice = Int(value) ?? options.startNotifyPerDevice
            case "--acquire-per-device": options.acquirePerDevice = Int(value) ?? options.acquirePerDevice
            case "--simulator": options.simulator = value
            case "--bleak-python": options.bleakPython = value
            case "--bleak-script": options.bleakScript = value
            case "--coalescing-us": options.coalescingMicroseconds = Int(value) ?? options.coalescingMicroseconds
            default: throw BenchmarkError("unknown option \(arguments[index])")
            }
            index += 2
        }
        coalescing = .microseconds(options.coalescingMicroseconds)
        let simulator = try SimulatorProcess(executable: options.simulator, devices: options.devices)
        defer { simulator.stop() }
        let addresses = (1...options.devices).map {
            String(format: "C0:54:45:00:%02X:%02X", ($0 >> 8) & 0xFF, $0 & 0xFF)
        }
        print("tether-gateway-bench: \(options.devices) devices, tether-sim --unthrottled on \(simulator.address)")
        var results: [Measurement] = []
        results.append(
            try await tether(
                .startNotifyOnly, wire: true, perDevice: options.startNotifyPerDevice, addresses: addresses,
                bus: simulator.address))
        results.append(
            try await tether(
                .acquireFirst, wire: false, perDevice: options.acquirePerDevice, addresses: addresses,
                bus: simulator.address))
        if let python = options.bleakPython {
            results.append(
                try await bleak(
                    python: python, script: options.bleakScript, perDevice: options.startNotifyPerDevice,
                    addresses: addresses, bus: simulator.address))
        }
        for result in results {
            print(
                String(
                    format: "%-34@ %8d/%-8d notifications  %10.0f notifications/s  %7.2f µs CPU/notification",
                    result.name as NSString, result.received, result.expected, result.rate,
                    result.cpuMicrosecondsPerNotification))
        }
        if let python = options.bleakPython, results.count == 3 {
            // The libdbus StartNotify path, for comparison: what the wire-protocol connection replaced.
            let libdbus = try await tether(
                .startNotifyOnly, wire: false, perDevice: options.startNotifyPerDevice, addresses: addresses,
                bus: simulator.address)
            // bleak again after it, so a machine whose load changed during the run shows as two different figures.
            let bleakAgain = try await bleak(
                python: python, script: options.bleakScript, perDevice: options.startNotifyPerDevice,
                addresses: addresses, bus: simulator.address)
            for result in [libdbus, bleakAgain] {
                print(
                    String(
                        format: "%-34@ %8d/%-8d notifications  %10.0f notifications/s  %7.2f µs CPU/notification",
                        result.name as NSString, result.received, result.expected, result.rate,
                        result.cpuMicrosecondsPerNotification))
            }
            print(
                String(
                    format: "libdbus StartNotify vs bleak (second run): rate %.2fx at %.2fx the CPU/notification",
                    libdbus.rate / bleakAgain.rate,
                    libdbus.cpuMicrosecondsPerNotification / bleakAgain.cpuMicrosecondsPerNotification))
        }
        if results.count == 3 {
            let (start, acquire, bleak) = (results[0], results[1], results[2])
            print(
                String(
                    format: "ratios vs bleak (same run): StartNotify rate %.2fx at %.2fx the CPU/notification; "
                        + "AcquireNotify rate %.2fx at %.2fx the CPU/notification",
                    start.rate / bleak.rate, start.cpuMicrosecondsPerNotification / bleak.cpuMicrosecondsPerNotification,
                    acquire.rate / bleak.rate,
                    acquire.cpuMicrosecondsPerNotification / bleak.cpuMicrosecondsPerNotification))
        }
        print(String(format: "AcquireNotify / StartNotify rate: %.2fx", results[1].rate / results[0].rate))
    }

    // MARK: Tether

    /// The wire connection's read coalescing (`--coalescing-us`; 0 turns it off).
    nonisolated(unsafe) static var coalescing: Duration = .milliseconds(1)

    static func tether(
        _ preference: GatewayConfiguration.NotifyPreference, wire: Bool, perDevice: Int, addresses: [String],
        bus: String
    ) async throws -> Measurement {
        let connection = try await DBusConnection.connect(to: .address(bus))
        let notifications = wire ? try await DBusWireConnection.connect(to: .address(bus), coalescing: coalescing) : nil
        let session = BlueZSession(connection: connection, notifications: notifications)
        let adapter = Adapter(session: session)
        defer {
            Task {
                await connection.close()
                await notifications?.close()
            }
        }
        try await discover(addresses, adapter: adapter, session: session)
        let counter = ReceiveCounter()
        var receivers: [Task<Void, Never>] = []
        var devices: [Device] = []
        var acquisitions: [NotifyAcquisition] = []
        for address in addresses {
            let device = adapter.device(address: address)
            try await device.connect(timeout: .seconds(20))
            try await device.waitUntilServicesResolved(timeout: .seconds(20))
            let tx = GattCharacteristic(
                session: session, path: device.path.appending("service0010").appending("char0013"))
            let values: NotificationBatches
            switch preference {
            case .startNotifyOnly:
                values = try await tx.startNotify()
            case .acquireFirst, .acquireOnly:
                let acquisition = try await tx.acquireNotify()
                values = acquisition.packets
                acquisitions.append(acquisition)
            }
            devices.append(device)
            receivers.append(
                Task {
                    var decoder = FrameDecoder()
                    for await batch in values {
                        var hits = 0
                        for value in batch {
                            _ = decoder.append(value)
                            while let frame = try? decoder.decode() {
                                if case .hitEvent = try? LinkMessage(frame: frame) { hits += 1 }
                            }
                        }
                        let now = ContinuousClock.now
                        counter.withLock {
                            $0.notifications += batch.count
                            $0.hits += hits
                            if $0.first == nil { $0.first = now }
                            $0.last = now
                        }
                    }
                })
        }
        let expected = perDevice * addresses.count
        let cpuStart = processCPUSeconds()
        try await stream(perDevice, to: addresses, connection: connection)
        try await waitForCount(expected) { counter.withLock { $0.notifications } }
        let cpu = processCPUSeconds() - cpuStart
        let (received, hits, first, last) = counter.withLock { ($0.notifications, $0.hits, $0.first, $0.last) }
        for receiver in receivers { receiver.cancel() }
        for acquisition in acquisitions { acquisition.close() }
        for device in devices { try? await device.disconnect() }
        let seconds = first.flatMap { first in last.map { Self.seconds(first.duration(to: $0)) } } ?? 0
        let name =
            switch (preference, wire) {
            case (.startNotifyOnly, true): "tether StartNotify (wire)"
            case (.startNotifyOnly, false): "tether StartNotify (libdbus)"
            case (.acquireFirst, _), (.acquireOnly, _): "tether AcquireNotify"
            }
        if hits != received { print("note: \(name) decoded \(hits) HIT_EVENT frames from \(received) notifications") }
        return Measurement(name: name, received: received, expected: expected, seconds: seconds, cpuSeconds: cpu)
    }

    static func discover(_ addresses: [String], adapter: Adapter, session: BlueZSession) async throws {
        try await adapter.startDiscovery()
        let deadline = ContinuousClock.now + .seconds(20)
        for address in addresses {
            while (try? await adapter.device(address: address).properties()) == nil {
                guard ContinuousClock.now < deadline else { throw BenchmarkError("\(address) not discovered") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await adapter.stopDiscovery()
    }

    /// Asks the simulator to send `perDevice` notifications on every device at once.
    static func stream(_ perDevice: Int, to addresses: [String], connection: DBusConnection) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for address in addresses {
                group.addTask {
                    _ = try await connection.call(
                        destination: "org.bluez", path: "/io/tether/simulator", interface: "io.tether.Simulator1",
                        member: "StreamNotifications",
                        arguments: [
                            .objectPath(DBusObjectPath("/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_"))),
                            .uint32(UInt32(perDevice)),
                        ], timeout: .seconds(300))
                }
            }
            try await group.waitForAll()
        }
    }

    /// Waits until `count()` reaches `expected`, or nothing arrived for 5 s (then the shortfall is reported).
    static func waitForCount(_ expected: Int, _ count: () -> Int) async throws {
        var seen = -1
        var idleSince = ContinuousClock.now
        while count() < expected {
            try await Task.sleep(for: .milliseconds(20))
            let now = count()
            if now != seen {
                seen = now
                idleSince = ContinuousClock.now
            } else if ContinuousClock.now - idleSince > .seconds(5) {
                return
            }
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    final class ReceiveCounter: Sendable {
        struct State {
            var notifications = 0
            var hits = 0
            var first: ContinuousClock.Instant?
            var last: ContinuousClock.Instant?
        }

        let state = Mutex(State())

        func withLock<Result>(_ body: (inout State) -> Result) -> Result { state.withLock { body(&$0) } }
    }

    // MARK: bleak

    static func bleak(python: String, script: String, perDevice: Int, addresses: [String], bus: String)
        async throws -> Measurement
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, String(perDevice)] + addresses
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        environment["PYTHONWARNINGS"] = "ignore"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let handle = output.fileHandleForReading
        var text = ""
        while !text.contains("READY") {
            let data = handle.availableData
            guard !data.isEmpty else { throw BenchmarkError("bleak client exited before READY: \(text)") }
            text += String(decoding: data, as: UTF8.self)
        }
        let connection = try await DBusConnection.connect(to: .address(bus))
        try await stream(perDevice, to: addresses, connection: connection)
        await connection.close()
        let rest = handle.readDataToEndOfFile()
        process.waitUntilExit()
        text += String(decoding: rest, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let received = json["received"] as? Int, let seconds = json["seconds"] as? Double,
            let cpu = json["cpu_seconds"] as? Double
        else { throw BenchmarkError("bleak client printed no result: \(text)") }
        return Measurement(
            name: "bleak 3.1.0 StartNotify", received: received, expected: perDevice * addresses.count,
            seconds: seconds, cpuSeconds: cpu)
    }
}
