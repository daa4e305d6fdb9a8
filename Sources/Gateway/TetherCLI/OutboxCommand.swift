import ArgumentParser
import TetherControlClient
import ControlContract

/// `tether outbox list`: the commands waiting to go to the backend (control-api.md, Outbox command).
struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "Inspect the outbox: what the gateway still has to send to the backend.",
        subcommands: [List.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List outbox commands, oldest first.")

        @OptionGroup var connection: BusOptions

        @Option(help: ArgumentHelp("Only commands with this status: pending, in_flight, failed, conflict or dead.", valueName: "status"))
        var status: String?

        @Option(help: "At most this many commands.")
        var limit: UInt32 = 50

        @Flag(help: "Print an array of outbox command records as JSON.")
        var json = false

        func validate() throws {
            if let status, !GatewayContract.outboxStatuses.contains(status) {
                throw ValidationError("--status must be one of \(GatewayContract.outboxStatuses.joined(separator: ", ")), not '\(status)'")
            }
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            let commands = try await connection.withGateway { try await $0.outbox(status: status, limit: limit) }
            if json {
                Output.line(RecordJSON.text(commands))
            } else {
                Output.line(commands.isEmpty ? "The outbox is empty." : OutboxCommand.table(commands))
            }
        }
    }

    static func table(_ commands: [GatewayRecord]) -> String {
        typealias F = RecordFormatting
        var table = TextTable("ID", "ENTITY", "KIND", "STATUS", "ATTEMPTS", "CREATED", "NEXT ATTEMPT", "LAST ERROR")
        for command in commands {
            table.add([
                command.string("id") ?? F.absent, command.string("entity") ?? F.absent, command.string("kind") ?? F.absent,
                command.string("status") ?? F.absent, F.number(command.integer("attempts")),
                F.time(command.integer("created_at")), F.time(command.integer("next_attempt_at")),
                command.string("last_error") ?? "",
            ])
        }
        return table.text
    }
}
