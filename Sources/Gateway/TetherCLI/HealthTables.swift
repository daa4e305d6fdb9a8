import DBus
import Foundation
import TetherControlClient

/// How `tether health` shows health records: tables of devices and samples, one line per live reading, and the
/// `--since` time. A value that is not a number shows its status in capitals (NAN, NRES, POSITIVE-INFINITY), never
/// a number (IEEE 11073-20601 Annex F.8).
enum HealthTables {
    typealias F = RecordFormatting

    static func devices(_ devices: [GatewayRecord]) -> String {
        // CLOCK SET: when tetherd wrote the device's clock on this link ([health] write_device_time), "-" when not.
        var table = TextTable("ADDRESS", "NAME", "CONNECTED", "SERVICES", "RACP", "SAMPLES", "LAST SAMPLE", "CLOCK SET", "CURSORS")
        for device in devices {
            table.add([
                device.string("address") ?? F.absent, device.string("name") ?? F.absent, F.flag(device.bool("connected")),
                strings(device["services"]) ?? F.absent, strings(device["record_access"]) ?? F.absent,
                F.number(device.integer("samples_stored")), F.time(device.integer("last_sample_at")),
                F.time(device.integer("clock_written_at")), cursors(device["cursors"]),
            ])
        }
        return table.text
    }

    static func samples(_ samples: [GatewayRecord]) -> String {
        // UID last: what `tether health delete|correct` take.
        var table = TextTable("TIME (UTC)", "METRIC", "VALUE", "UNIT", "CANONICAL", "TIME BASIS", "DEVICE TIME", "USER", "SEQ", "LANE", "UPLOAD", "UID")
        for sample in samples {
            let canonical = sample.string("canonical_value").map { "\($0) \(sample.string("canonical_unit") ?? "")" } ?? F.absent
            table.add([
                F.time(sample.integer("effective_at")), sample.string("metric") ?? F.number(sample.integer("metric_code")),
                value(sample), sample.string("unit") ?? F.absent, canonical, sample.string("time_basis") ?? F.absent,
                sample.string("device_time") ?? F.absent, F.number(sample.integer("user_index")),
                F.number(sample.integer("sequence")), sample.string("lane") ?? F.absent,
                upload(sample) + (sample.integer("deleted_at") != nil ? ", deleted" : ""), sample.string("uid") ?? F.absent,
            ])
        }
        return table.text
    }

    /// `tether health deletions`: one line per tombstone, oldest first.
    static func deletions(_ deletions: [GatewayRecord]) -> String {
        var table = TextTable("REQUESTED (UTC)", "DEVICE", "SAMPLE", "REASON", "BY", "REPLACEMENT", "UPLOAD", "NOTE")
        for deletion in deletions {
            table.add([
                F.time(deletion.integer("requested_at")), deletion.string("address") ?? deletion.string("peripheral_uid") ?? F.absent,
                deletion.string("sample_uid") ?? F.absent, deletion.string("reason") ?? F.absent,
                deletion.string("requested_by") ?? F.absent, deletion.string("replacement_uid") ?? F.absent, upload(deletion),
                deletion.string("note") ?? F.absent,
            ])
        }
        return table.text
    }

    /// What `delete` and `correct` print: the tombstone, and the replacement for a correction.
    static func changeLine(_ deletion: GatewayRecord) -> String {
        let sample = deletion.string("sample_uid") ?? F.absent
        if let replacement = deletion.string("replacement_uid") {
            return "Corrected \(sample): replaced by \(replacement) (tombstone \(deletion.string("uid") ?? F.absent)); the backend gets both on the next sync."
        }
        return "Deleted \(sample) (tombstone \(deletion.string("uid") ?? F.absent)); the backend gets the deletion on the next sync."
    }

    /// `tether health projections`: one line per key, the freshness in a column.
    static func projections(_ projections: [GatewayRecord]) -> String {
        var table = TextTable("DEVICE", "USER", "METRIC", "DAY (UTC)", "FRESHNESS", "COUNT", "MIN", "MAX", "MEAN", "LAST", "UNIT", "FETCHED")
        for projection in projections {
            let fetched = projection.integer("fetched_at") != nil
            table.add([
                projection.string("address") ?? projection.string("peripheral_uid") ?? F.absent, F.number(projection.integer("user_index")),
                projection.string("metric") ?? F.number(projection.integer("metric_code")), projection.string("day") ?? F.absent,
                projection.string("freshness") ?? F.absent, fetched ? F.number(projection.integer("count")) : F.absent,
                projection.string("min") ?? F.absent, projection.string("max") ?? F.absent, projection.string("mean") ?? F.absent,
                projection.string("last") ?? F.absent, projection.string("unit") ?? F.absent, F.time(projection.integer("fetched_at")),
            ])
        }
        return table.text
    }

    /// The upload state; a rejected sample shows the backend's reason, which is what a technician acts on.
    static func upload(_ sample: GatewayRecord) -> String {
        let state = sample.string("upload_state") ?? F.absent
        guard state == "rejected", let reason = sample.string("rejected_reason") else { return state }
        return "rejected: \(reason)"
    }

    /// `2026-11-24 08:00:01Z  C0:54:45:00:00:01  2A36  cuff_pressure  60 mm[Hg]  intermediate`.
    static func readingLine(_ reading: GatewayRecord) -> String {
        var parts = [
            F.time(reading.integer("received_at")), reading.string("address") ?? F.absent,
            reading.string("characteristic") ?? F.absent, reading.string("metric") ?? F.absent,
            "\(value(reading)) \(reading.string("unit") ?? "")",
        ]
        if let user = reading.integer("user_index") { parts.append("user \(user)") }
        if reading.bool("intermediate") == true { parts.append("intermediate (not stored)") }
        return parts.joined(separator: "  ")
    }

    /// The number as the device reported it, or its status when it is not one.
    static func value(_ record: GatewayRecord) -> String {
        if record.string("status") == "number", let value = record.string("value") { return value }
        return (record.string("status") ?? F.absent).uppercased()
    }

    static func strings(_ value: DBusValue?) -> String? {
        guard let elements = value?.unwrappingVariants.arrayElements else { return nil }
        return elements.compactMap(\.stringValue).joined(separator: ",")
    }

    /// `2A18 #12 (epoch 0)` per cursor.
    static func cursors(_ value: DBusValue?) -> String {
        guard let elements = value?.unwrappingVariants.arrayElements, !elements.isEmpty else { return F.absent }
        return elements.compactMap { element -> String? in
            guard let fields = element.variantDictionaryValue else { return nil }
            let cursor = GatewayRecord(fields)
            let position = cursor.integer("position").map { "#\($0)" } ?? "start"
            return "\(cursor.string("characteristic") ?? "?") \(position) (epoch \(cursor.integer("epoch") ?? 0))"
        }.joined(separator: ", ")
    }

    /// ISO 8601 with a zone (`2026-11-24T08:00:00Z`, `…+01:00`, fractions allowed) or a date alone (UTC midnight), as
    /// UTC nanoseconds.
    static func nanoseconds(iso8601 text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds], [.withFullDate],
        ] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1e9).rounded()) }
        }
        return nil
    }
}
