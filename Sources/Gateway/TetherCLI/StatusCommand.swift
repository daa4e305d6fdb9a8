import ArgumentParser
import TetherControlClient

/// `tether status`: the gateway at a glance (control-api.md, Status).
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the gateway's state: BlueZ, devices, stored events, outbox, sync and storage.")

    @OptionGroup var connection: BusOptions

    @Flag(help: "Print the status record as JSON (keys as in docs/specs/control-api.md; times in UTC nanoseconds).")
    var json = false

    func run() async throws {
        let status = try await connection.withGateway { try await $0.status() }
        if json {
            Output.line(RecordJSON.text(status))
        } else {
            Output.line(Self.render(status))
        }
    }

    static func render(_ status: GatewayRecord) -> String {
        typealias F = RecordFormatting
        let bluez: String
        switch status.bool("bluez_available") {
        case true?:
            bluez = "available" + (status.string("adapter").map { " (\($0))" } ?? "")
                + (status.string("agent_error").map { ", pairing impossible: \($0)" } ?? "")
        case false?: bluez = "NOT available"
        case nil: bluez = F.absent
        }
        var syncLine = F.absent
        if let result = status.string("last_sync_result") {
            syncLine = result == "never" ? "never" : "\(result) at \(F.time(status.integer("last_sync_at")))"
            if let error = status.string("last_sync_error"), result == "failed" { syncLine += ": \(error)" }
        }
        var table = TextTable("", "")
        table.add(["tetherd", (status.string("version") ?? F.absent) + ", up since " + F.time(status.integer("started_at"))])
        table.add(["bluez", bluez + ", scanning " + F.flag(status.bool("scanning"))])
        table.add(["devices", "\(F.number(status.integer("devices_known"))) known, \(F.number(status.integer("devices_connected"))) connected"])
        table.add(["events", "\(F.number(status.integer("events_stored"))) stored"])
        table.add([
            "outbox",
            "\(F.number(status.integer("outbox_pending"))) pending, \(F.number(status.integer("outbox_in_flight"))) in flight, "
                + "\(F.number(status.integer("outbox_failed"))) failed, \(F.number(status.integer("outbox_conflict"))) conflict, "
                + "\(F.number(status.integer("outbox_dead"))) dead; oldest pending \(F.duration(status.integer("outbox_oldest_pending_age")))",
        ])
        table.add(["conflicts", F.number(status.integer("conflicts"))])
        table.add([
            "health",
            "\(F.number(status.integer("health_samples_waiting"))) samples waiting (\(F.number(status.integer("health_samples_failed"))) failed, retried), "
                + "\(F.number(status.integer("health_samples_rejected"))) rejected; \(F.number(status.integer("health_deletions_waiting"))) deletions waiting",
        ])
        table.add(["last sync", syncLine])
        table.add(["clock skew", F.duration(status.integer("sync_clock_skew"))])
        table.add([
            "storage",
            (status.string("storage") ?? F.absent) + ", database " + F.bytes(status.integer("database_bytes"))
                + (status.integer("sqlite_heap_bytes").map { ", SQLite heap " + F.bytes($0) } ?? ""),
        ])
        return table.lines.dropFirst().joined(separator: "\n")
    }
}
