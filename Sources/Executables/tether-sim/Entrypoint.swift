import ArgumentParser
import BlueZSimulator
import DBus
import Dispatch
import Foundation

/// `tether-sim`: a simulated bluetoothd on a D-Bus bus (see Sources/BlueZSimulator).
@main
struct TetherSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tether-sim",
        abstract: "Simulate BlueZ (org.bluez) with Tether devices on a D-Bus bus.",
        discussion: """
            Prints DBUS_SYSTEM_BUS_ADDRESS=<address> on stdout once org.bluez is owned. \
            Control it through io.tether.Simulator1 at /io/tether/simulator.
            """)

    @Option(help: "The bus to serve on, e.g. unix:path=/tmp/x/bus.")
    var bus: String?

    @Flag(help: "Start a private dbus-daemon (bleak-compatible system bus) and serve on it.")
    var startPrivateBus = false

    @Option(help: "A JSON configuration file (SimulatorConfiguration).")
    var config: String?

    @Option(help: "Without --config: how many Tether devices to simulate.")
    var devices = 1

    @Option(help: "Without --config: the seed of every random choice.")
    var seed: UInt64 = 1

    @Flag(help: "Lift the link model's rate limit (benchmarks): notifications go as fast as the client takes them.")
    var unthrottled = false

    func validate() throws {
        guard (bus != nil) != startPrivateBus else {
            throw ValidationError("Give exactly one of --bus and --start-private-bus.")
        }
    }

    func run() async throws {
        var settings = try config.map(SimulatorConfiguration.load(contentsOf:))
            ?? SimulatorConfiguration.generated(count: devices, seed: seed)
        if unthrottled { settings.link.unthrottled = true }
        let privateBus = startPrivateBus ? try await DBusPrivateBus.start() : nil
        let address = privateBus?.address ?? bus ?? ""
        let simulator = try await BlueZSimulator.start(configuration: settings, bus: .address(address))
        // Closing the connection ends `run()` below, which then stops the daemon and removes its directory.
        let stop: @Sendable () -> Void = {
            Task { await simulator.stop() }
        }
        // A parent that started us with Foundation.Process may have handed down a mask blocking SIGTERM.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let sources = [SIGTERM, SIGINT].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: stop)
            source.resume()
            return source
        }
        FileHandle.standardOutput.write(Data("DBUS_SYSTEM_BUS_ADDRESS=\(address)\n".utf8))
        await simulator.run()
        sources.forEach { $0.cancel() }
        privateBus?.stop()
    }
}
