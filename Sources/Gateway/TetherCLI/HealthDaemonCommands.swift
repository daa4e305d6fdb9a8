import ArgumentParser
import ControlContract
import DBus
import Foundation
import TetherControlClient

/// `tether health devices|samples|watch|backfill`: what tetherd's health lanes hold and see (control-api.md,
/// "Health"). `decode` (HealthCommand.swift) works offline; these talk to tetherd.
extension HealthCommand {
    /// `tether health devices`: each health device with its services, samples and cold-lane cursors.
    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "devices",
            abstract: "List the health devices tetherd knows: services, connection, samples stored, cursors.")

        @OptionGroup var connection: BusOptions

        @Flag(help: "Print an array of health device records as JSON.")
        var json = false

        func run() async throws {
            let devices = try await connection.withGateway { try await $0.healthDevices() }
            if json {
                Output.line(RecordJSON.text(devices))
            } else if devices.isEmpty {
                Output.line("No health devices yet: 'tether scan' finds them, 'tether pair ADDRESS' adds one.")
            } else {
                Output.line(HealthTables.devices(devices))
            }
        }
    }

    /// `tether health samples DEVICE`: stored samples, newest first.
    struct Samples: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "samples",
            abstract: "List a health device's stored samples, newest first.",
            discussion: """
                A value that is not a number (IEEE 11073 NaN, NRes, +INF, -INF) shows its status instead: a \
                cuff's failed measurement is NAN, never 2047. Intermediate values (cuff pressure while inflating) \
                are never stored: 'tether health watch' shows them.
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("The device: its address or peripheral id.", valueName: "device"))
        var device: String

        @Option(help: ArgumentHelp("Only samples at or after this time (ISO 8601: 2026-11-24T08:00:00Z or a date).", valueName: "time"))
        var since: String?

        @Option(help: "At most this many samples.")
        var limit: UInt32 = 50

        @Flag(help: "Print an array of health sample records as JSON.")
        var json = false

        func validate() throws {
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
            _ = try sinceNanoseconds()
        }

        func sinceNanoseconds() throws -> Int64 {
            guard let since else { return 0 }
            guard let nanoseconds = HealthTables.nanoseconds(iso8601: since) else {
                throw ValidationError("--since must be an ISO 8601 time like 2026-11-24T08:00:00Z or a date like 2026-11-24, not '\(since)'")
            }
            return nanoseconds
        }

        func run() async throws {
            let (device, limit, since) = (device, limit, try sinceNanoseconds())
            let samples = try await connection.withGateway { try await $0.healthSamples(device: device, since: since, limit: limit) }
            if json {
                Output.line(RecordJSON.text(samples))
            } else {
                Output.line(samples.isEmpty ? "No samples stored for \(device)." : HealthTables.samples(samples))
            }
        }
    }

    /// `tether health projections [--device DEVICE]`: the server's daily rollups the gateway pulled, with freshness.
    struct Projections: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "projections",
            abstract: "List the backend's daily rollups of the health samples, as the gateway last pulled them.",
            discussion: """
                One line per device, user, metric and UTC day the gateway's uploads touched: count, min, max, mean \
                and last value as the backend computed them from the samples it holds (deleted ones left out). \
                FRESHNESS is fresh (the backend's answer after the last upload touching the day), stale (an \
                upload touched the day since; the next sync pulls it) or computing (a pull is under way).
                """)

        @OptionGroup var connection: BusOptions

        @Option(help: ArgumentHelp("Only this device (its address or peripheral id).", valueName: "device"))
        var device: String?

        @Flag(help: "Print an array of health projection records as JSON.")
        var json = false

        func run() async throws {
            let device = device ?? ""
            let projections = try await connection.withGateway { try await $0.healthProjections(device: device) }
            if json {
                Output.line(RecordJSON.text(projections))
            } else {
                Output.line(projections.isEmpty ? "No projections yet: they follow the first health upload." : HealthTables.projections(projections))
            }
        }
    }

    /// `tether health watch [DEVICE]`: live readings, intermediates included, until interrupted.
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Print live health readings as they arrive, intermediate values included, until interrupted.")

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("Only this device's readings (its address).", valueName: "device"))
        var device: String?

        @Flag(help: "Print each reading as one JSON line (keys as in docs/specs/control-api.md).")
        var json = false

        func run() async throws {
            let (json, device) = (json, device?.uppercased())
            let interruption = Interruption()
            defer { interruption.cancel() }
            try await connection.withGateway { client in
                let readings = try await client.signals(.healthReading)
                // Subscribed first, then checked: a daemon that is not there fails now rather than watching nothing.
                guard try await client.isDaemonRunning() else { throw GatewayControlError.daemonNotRunning }
                FileHandle.standardError.write(Data("Watching health readings of \(device ?? "every device"); Ctrl-C to stop.\n".utf8))
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await signal in readings {
                            guard let fields = signal.arguments.first?.variantDictionaryValue else { continue }
                            let reading = GatewayRecord(fields)
                            if let device, reading.string("address")?.uppercased() != device { continue }
                            Output.line(json ? RecordJSON.text(reading, pretty: false) : HealthTables.readingLine(reading))
                        }
                    }
                    group.addTask { await interruption.wait() }
                    await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    /// `tether health backfill DEVICE`: the cold lane now, on a connected device with a RACP.
    struct Backfill: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "backfill",
            abstract: "Read a connected device's stored records now (RACP) and say how many were stored.",
            discussion: """
                tetherd reads every device's stored records by itself on every connection, from the cursor it \
                saved; this asks for it now (after the person took readings while connected, say). The device must \
                be connected and keep its records behind a Record Access Control Point (glucose meters, CGMs, \
                oximeters with storage).
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("The device: its address or peripheral id.", valueName: "device"))
        var device: String

        @Flag(help: "Print an array of backfill results as JSON.")
        var json = false

        func run() async throws {
            let device = device
            let results = try await connection.withGateway(callTimeout: .seconds(180)) {
                try await $0.backfill(device, timeout: .seconds(180))
            }
            if json {
                Output.line(RecordJSON.text(results))
                return
            }
            for result in results {
                let service = result.string("service") ?? RecordFormatting.absent
                let stored = result.integer("records_stored") ?? 0
                let outcome = result.string("outcome") ?? RecordFormatting.absent
                let reason = result.string("reason").map { " (\($0))" } ?? ""
                Output.line("\(service): \(outcome)\(reason), \(stored) record\(stored == 1 ? "" : "s") stored")
            }
            if results.contains(where: { $0.string("outcome") != "complete" }) { throw TetherExitCode.operationFailed }
        }
    }
}
