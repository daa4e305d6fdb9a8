import ArgumentParser
import TetherControlClient

/// `tether forget DEVICE`: unpair a device and drop it from the registry (its stored events stay and still sync).
struct ForgetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Unpair a device and remove it from the gateway (events already stored are kept and still sync).")

    @OptionGroup var connection: BusOptions

    @Argument(help: ArgumentHelp("The device's serial or address.", valueName: "device"))
    var device: String

    func run() async throws {
        try await connection.withGateway { try await $0.forget(device) }
        Output.line("forgot \(device)")
    }
}
