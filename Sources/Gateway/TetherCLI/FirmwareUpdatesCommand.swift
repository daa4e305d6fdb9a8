import ArgumentParser
import TetherControlClient

extension FirmwareCommand {
    /// `tether firmware updates [DEVICE] [--limit N] [--json]`: tetherd's firmware update journal, newest first.
    struct Updates: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "updates",
            abstract: "List the firmware updates tetherd made or is making, newest first.",
            discussion: """
                Each update with its device, image version, phase (uploading, testing, proving, confirming, \\
                finished), the bytes the device acknowledged, and how it ended (confirmed, running-in-test, \\
                already-running, reverted, failed, cancelled) with tetherd's reason.
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("Only this device's updates (its address).", valueName: "device"))
        var device: String?

        @Option(help: ArgumentHelp("At most this many (1 to 1000).", valueName: "n"))
        var limit = 20

        @Flag(help: "Print an array of update records as JSON.")
        var json = false

        func validate() throws {
            guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1 to 1000.") }
        }

        func run() async throws {
            let (device, limit) = (device ?? "", UInt32(limit))
            let updates = try await connection.withGateway { try await $0.firmwareUpdates(device: device, limit: limit) }
            if json {
                Output.line(RecordJSON.text(updates))
                return
            }
            var table = TextTable("STARTED", "DEVICE", "VERSION", "PHASE", "BYTES", "OUTCOME", "MESSAGE")
            for update in updates {
                let bytes = "\(update.integer("bytes_acknowledged") ?? 0)/\(update.integer("image_bytes") ?? 0)"
                table.add([
                    RecordFormatting.time(update.integer("created_at")), update.string("address") ?? RecordFormatting.absent,
                    update.string("image_version") ?? RecordFormatting.absent, update.string("phase") ?? RecordFormatting.absent, bytes,
                    update.string("outcome") ?? RecordFormatting.absent, update.string("message") ?? "",
                ])
            }
            for line in updates.isEmpty ? ["No firmware updates."] : table.lines { Output.line(line) }
        }
    }
}
