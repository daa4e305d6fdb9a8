import ArgumentParser
import TetherControlClient

/// `tether sync`: ask tetherd to sync with the backend now instead of at its next scheduled run.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Ask tetherd to sync with the backend now; 'tether status' shows the result.")

    @OptionGroup var connection: BusOptions

    func run() async throws {
        try await connection.withGateway { try await $0.syncNow() }
        Output.line("sync requested; 'tether status' shows the result")
    }
}
