import ArgumentParser
import Foundation
import TetherControlClient

/// `tether dead-letters list|retry|discard`: outbox commands the backend refused for good.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List, retry or discard outbox commands the backend refused for good.",
        subcommands: [List.self, Retry.self, Discard.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List dead letters with the backend's last error.")

        @OptionGroup var connection: BusOptions

        @Option(help: "At most this many dead letters.")
        var limit: UInt32 = 50

        @Flag(help: "Print an array of outbox command records as JSON.")
        var json = false

        func run() async throws {
            let letters = try await connection.withGateway { try await $0.deadLetters(limit: limit) }
            if json {
                Output.line(RecordJSON.text(letters))
            } else {
                Output.line(letters.isEmpty ? "No dead letters." : OutboxCommand.table(letters))
            }
        }
    }

    /// The id-or-all choice shared by retry and discard.
    struct Selection: ParsableArguments {
        @Argument(help: ArgumentHelp("The dead letter's command id (a UUID, as 'tether dead-letters list' shows).", valueName: "id"))
        var id: String?

        @Flag(help: "Every dead letter.")
        var all = false

        func validate() throws {
            switch (id, all) {
            case (nil, false): throw ValidationError("Name a dead letter's id, or give --all.")
            case (_?, true): throw ValidationError("Give either an id or --all, not both.")
            case (let id?, false) where UUID(uuidString: id) == nil:
                throw ValidationError("'\(id)' is not a command id (a UUID such as 0193a5c2-7d1e-7b3a-9f00-2c4d5e6f7a8b)")
            default: break
            }
        }

        /// control-api.md: `"*"` = all.
        var argument: String { all ? "*" : id!.lowercased() }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead letters back in the outbox; they go out with the next sync.",
            discussion: "Needs root or the 'tether' group.")

        @OptionGroup var connection: BusOptions
        @OptionGroup var selection: Selection

        func run() async throws {
            let count = try await connection.withGateway { try await $0.retryDeadLetter(selection.argument) }
            try DeadLettersCommand.report(count, verb: "requeued", selection: selection)
        }
    }

    struct Discard: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop dead letters for good (the backend never gets them).",
            discussion: "Needs root or the 'tether' group.")

        @OptionGroup var connection: BusOptions
        @OptionGroup var selection: Selection

        func run() async throws {
            let count = try await connection.withGateway { try await $0.discardDeadLetter(selection.argument) }
            try DeadLettersCommand.report(count, verb: "discarded", selection: selection)
        }
    }

    static func report(_ count: UInt32, verb: String, selection: Selection) throws {
        if count == 0, let id = selection.id {
            throw notFound("no dead letter \(id); 'tether dead-letters list' shows the ids")
        }
        Output.line("\(verb) \(count) dead letter\(count == 1 ? "" : "s")")
    }
}
