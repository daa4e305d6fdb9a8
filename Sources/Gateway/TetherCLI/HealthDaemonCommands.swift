import ArgumentParser
import ControlContract
import DBus
import Foundation
import TetherControlClient

/// `tether health devices|samples|delete|correct|deletions|projections|watch|backfill`: what tetherd's health lanes hold and see (control-api.md,
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

    /// `tether health samples [DEVICE]`: stored samples, newest first.
    struct Samples: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "samples",
            abstract: "List stored health samples, newest first.",
            discussion: """
                A value that is not a number (IEEE 11073 NaN, NRes, +INF, -INF) shows its status instead: a \
                cuff's failed measurement is NAN, never 2047. Intermediate values (cuff pressure while inflating) \
                are never stored: 'tether health watch' shows them. The UID column names a sample for 'tether \
                health delete' and 'tether health correct'. Metrics: blood_pressure_systolic, \
                blood_pressure_diastolic, blood_pressure_mean, pulse_rate_non_invasive, heart_rate, rr_interval, \
                body_temperature, body_mass, glucose, cgm_glucose, oxygen_saturation, ...
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("Only this device: its address or peripheral id (every health device when left out).", valueName: "device"))
        var device: String?

        @Option(help: ArgumentHelp("Only this metric, by name (glucose, blood_pressure_systolic, heart_rate, ...).", valueName: "name"))
        var metric: String?

        @Option(help: ArgumentHelp("Only samples at or after this time (ISO 8601: 2026-11-24T08:00:00Z or a date).", valueName: "time"))
        var since: String?

        @Option(help: ArgumentHelp("Only samples before this time (ISO 8601, as --since).", valueName: "time"))
        var until: String?

        @Flag(help: "List deleted and corrected samples too (marked deleted in the UPLOAD column).")
        var includeDeleted = false

        @Option(help: "At most this many samples.")
        var limit: UInt32 = 50

        @Flag(help: "Print an array of health sample records as JSON.")
        var json = false

        func validate() throws {
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
            _ = try query()
        }

        func query() throws -> [String: DBusValue] {
            var query: [String: DBusValue] = ["limit": .uint32(limit)]
            for (name, text) in [("since", since), ("until", until)] {
                guard let text else { continue }
                guard let nanoseconds = HealthTables.nanoseconds(iso8601: text) else {
                    throw ValidationError("--\(name) must be an ISO 8601 time like 2026-11-24T08:00:00Z or a date like 2026-11-24, not '\(text)'")
                }
                query[name] = .int64(nanoseconds)
            }
            if let metric { query["metric"] = .string(metric) }
            if includeDeleted { query["include_deleted"] = .bool(true) }
            return query
        }

        func run() async throws {
            let (device, query) = (device ?? "", try query())
            let samples = try await connection.withGateway { try await $0.healthSamples(device: device, query: query) }
            if json {
                Output.line(RecordJSON.text(samples))
            } else {
                Output.line(samples.isEmpty ? "No samples stored\(device.isEmpty ? "" : " for \(device)")." : HealthTables.samples(samples))
            }
        }
    }

    /// `tether health delete UID`: the change lane by hand: the sample is tombstoned here and on the backend.
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a stored health sample, here and on the backend.",
            discussion: """
                For a reading that should not count (taken on someone else, a test measurement). The sample stays \
                in the gateway's database marked deleted, so that the device's copy of the reading never comes \
                back, and a tombstone reaches the backend on the next sync. 'tether health samples' shows each \
                sample's UID; 'tether health deletions' lists what was deleted. Nothing is deleted on the device.
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("The sample's uid (the UID column of 'tether health samples').", valueName: "uid"))
        var uid: String

        @Option(help: ArgumentHelp("Why, for the record (sent to the backend with the tombstone; at most 1000 characters).", valueName: "text"))
        var note: String?

        @Flag(help: "Print the tombstone record as JSON.")
        var json = false

        func run() async throws {
            let (uid, note) = (uid, note ?? "")
            let deletion = try await connection.withGateway { try await $0.deleteHealthSample(uid: uid, note: note) }
            Output.line(json ? RecordJSON.text(deletion) : HealthTables.changeLine(deletion))
        }
    }

    /// `tether health correct UID --value V | --user N`: a new version of the reading, the original tombstoned.
    struct Correct: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "correct",
            abstract: "Correct a stored health sample: its value, or the person it belongs to.",
            discussion: """
                Stores a corrected copy of the sample and deletes the original in one step; the backend gets the \
                new version (naming the one it replaces) and the original's tombstone on the next sync. --value \
                is in the sample's own unit (the UNIT column); the canonical value is converted from it exactly. \
                --user moves a reading on a shared scale to the right person (User Data Service index). A reading \
                the device reported as not a number (NAN) cannot be given a value: delete it instead. The time and \
                the unit cannot be corrected by hand.
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("The sample's uid (the UID column of 'tether health samples').", valueName: "uid"))
        var uid: String

        @Option(help: ArgumentHelp("The right value, a plain decimal in the sample's unit (120, 5.4).", valueName: "decimal"))
        var value: String?

        @Option(help: ArgumentHelp("The right user index (0-254).", valueName: "index"))
        var user: UInt32?

        @Option(help: ArgumentHelp("Why, for the record (sent to the backend with the tombstone; at most 1000 characters).", valueName: "text"))
        var note: String?

        @Flag(help: "Print the tombstone record (with replacement_uid) as JSON.")
        var json = false

        func validate() throws {
            guard value != nil || user != nil else { throw ValidationError("Give --value, --user or both.") }
        }

        func run() async throws {
            var correction: [String: DBusValue] = [:]
            if let value { correction["value"] = .string(value) }
            if let user { correction["user_index"] = .uint32(user) }
            let (uid, note, fields) = (uid, note ?? "", correction)
            let deletion = try await connection.withGateway { try await $0.correctHealthSample(uid: uid, correction: fields, note: note) }
            Output.line(json ? RecordJSON.text(deletion) : HealthTables.changeLine(deletion))
        }
    }

    /// `tether health deletions [DEVICE]`: the tombstones and their upload state.
    struct Deletions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "deletions",
            abstract: "List deleted and corrected health samples and whether the backend has the deletion.",
            discussion: """
                REASON is technician or correction (by hand), backend, or vanished-from-device; REPLACEMENT is a \
                correction's new sample. UPLOAD is the tombstone's upload state.
                """)

        @OptionGroup var connection: BusOptions

        @Argument(help: ArgumentHelp("Only this device: its address or peripheral id.", valueName: "device"))
        var device: String?

        @Option(help: "At most this many.")
        var limit: UInt32 = 100

        @Flag(help: "Print an array of health deletion records as JSON.")
        var json = false

        func run() async throws {
            let (device, limit) = (device ?? "", limit)
            let deletions = try await connection.withGateway { try await $0.healthDeletions(device: device, limit: limit) }
            if json {
                Output.line(RecordJSON.text(deletions))
            } else {
                Output.line(deletions.isEmpty ? "No health samples deleted or corrected." : HealthTables.deletions(deletions))
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
