import ArgumentParser
import TetherControlClient

/// `tether conflicts list|resolve`: settings changed both here and on the backend (control-api.md, Conflict).
struct ConflictsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List or resolve settings where the gateway's desired value and the device's disagree.",
        subcommands: [List.self, Resolve.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List settings conflicts: mine (desired), theirs (the device's) and what both last agreed on.")

        @OptionGroup var connection: BusOptions

        @Flag(help: "Print an array of conflict records as JSON.")
        var json = false

        func run() async throws {
            let conflicts = try await connection.withGateway { try await $0.conflicts() }
            if json {
                Output.line(RecordJSON.text(conflicts))
                return
            }
            guard !conflicts.isEmpty else {
                Output.line("No conflicts.")
                return
            }
            typealias F = RecordFormatting
            var table = TextTable("SERIAL", "KEY", "SETTING", "MINE (DESIRED)", "THEIRS (DEVICE)", "BASE", "DETECTED")
            for conflict in conflicts {
                table.add([
                    conflict.string("serial") ?? F.absent, F.number(conflict.integer("key")), conflict.string("name") ?? F.absent,
                    F.value(conflict["mine"]), F.value(conflict["theirs"]), F.value(conflict["base"]),
                    F.time(conflict.integer("detected_at")),
                ])
            }
            Output.line(table.text)
        }
    }

    enum Side: String, ExpressibleByArgument, CaseIterable {
        case mine, theirs
    }

    struct Resolve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Resolve a conflict: 'mine' sends the desired value to the device, 'theirs' keeps the device's.",
            discussion: "Needs root or the 'tether' group.")

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("The device's serial.", valueName: "serial"))
        var serial: String

        @Argument(help: ArgumentHelp("The setting: its name or key number, as 'tether conflicts list' shows.", valueName: "setting"))
        var setting: String

        @Option(help: "Which value wins.")
        var keep: Side

        func run() async throws {
            let key = try await connection.withGateway { client -> UInt8 in
                let conflicts = try await client.conflicts().filter { $0.string("serial") == serial }
                let match = conflicts.first { conflict in
                    conflict.string("name") == setting || conflict.integer("key").map(String.init) == setting
                }
                guard let match, let key = match.integer("key"), let byte = UInt8(exactly: key) else {
                    let open = conflicts.compactMap { $0.string("name") }.joined(separator: ", ")
                    throw notFound(
                        "no conflict on \(serial) for '\(setting)'"
                            + (open.isEmpty ? "; 'tether conflicts list' shows the open ones" : "; open on \(serial): \(open)"))
                }
                try await client.resolveConflict(serial: serial, key: byte, keep: keep.rawValue)
                return byte
            }
            Output.line("resolved \(serial) setting \(setting) (key \(key)): kept \(keep.rawValue)")
        }
    }
}
