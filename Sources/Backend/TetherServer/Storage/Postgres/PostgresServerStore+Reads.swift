import Foundation
import Logging
import NIOCore
import PostgresNIO
import SyncContract

// Reads: a batch's current rows before the planner runs (one statement per table), and the pull, settings, token
// and statistics reads.
extension PostgresServerStore {
    static func load(_ keys: BatchKeys, tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws -> BatchState {
        var state = BatchState()
        if !keys.commandIDs.isEmpty {
            let table = ServerTables.commandLog
            let query: PostgresQuery =
                "SELECT \(unescaped: table.postgresSelectList()) FROM command_log WHERE tenant = \(tenant) AND id = ANY(\(keys.commandIDs))"
            for row in try await fetch(table, query, connection, logger) { state.logged[row.id] = row }
        }
        if !keys.serials.isEmpty {
            let serials = Array(keys.serials)
            let devices: PostgresQuery =
                "SELECT \(unescaped: ServerTables.device.postgresSelectList()) FROM device WHERE tenant = \(tenant) AND serial = ANY(\(serials))"
            for row in try await fetch(ServerTables.device, devices, connection, logger) { state.devices[row.serial] = row }
            let settings: PostgresQuery =
                "SELECT \(unescaped: ServerTables.settings.postgresSelectList()) FROM device_settings WHERE tenant = \(tenant) AND serial = ANY(\(serials))"
            for row in try await fetch(ServerTables.settings, settings, connection, logger) { state.settings[row.serial] = row }
        }
        if !keys.events.isEmpty {
            let events = Array(keys.events)
            let query: PostgresQuery = """
                SELECT \(unescaped: ServerTables.event.postgresSelectList(prefix: "e."))
                FROM consumption_event e
                JOIN unnest(\(events.map(\.serial)), \(events.map { Int64($0.bootCounter) }), \(events.map(\.sequence))) AS k(serial, boot_counter, sequence)
                    ON e.serial = k.serial AND e.boot_counter = k.boot_counter AND e.sequence = k.sequence
                WHERE e.tenant = \(tenant)
                """
            for row in try await fetch(ServerTables.event, query, connection, logger) { state.events[row.key] = row }
        }
        if !keys.telemetry.isEmpty {
            let telemetry = Array(keys.telemetry)
            let query: PostgresQuery = """
                SELECT \(unescaped: ServerTables.telemetry.postgresSelectList(prefix: "t."))
                FROM telemetry t
                JOIN unnest(\(telemetry.map(\.serial)), \(telemetry.map(\.kind.rawValue)), \(telemetry.map(\.receivedAt))) AS k(serial, kind, received_at)
                    ON t.serial = k.serial AND t.kind = k.kind AND t.received_at = k.received_at
                WHERE t.tenant = \(tenant)
                """
            for row in try await fetch(ServerTables.telemetry, query, connection, logger) { state.telemetry[row.key] = row }
        }
        if !keys.firmwareUpdates.isEmpty {
            let query: PostgresQuery = """
                SELECT \(unescaped: ServerTables.firmwareUpdate.postgresSelectList())
                FROM firmware_update WHERE tenant = \(tenant) AND uid = ANY(\(Array(keys.firmwareUpdates)))
                """
            for row in try await fetch(ServerTables.firmwareUpdate, query, connection, logger) { state.firmwareUpdates[row.document.uid] = row }
        }
        return state
    }

    public func firmwareUpdates(tenant: String, address: String?) async throws -> [FirmwareUpdateRow] {
        let logger = logger
        return try await connection { connection in
            let table = ServerTables.firmwareUpdate
            let query: PostgresQuery = """
                SELECT \(unescaped: table.postgresSelectList()) FROM firmware_update
                WHERE tenant = \(tenant) AND (\(address)::text IS NULL OR address = \(address))
                ORDER BY finished_at DESC, uid DESC
                """
            return try await Self.fetch(table, query, connection, logger)
        }
    }

    /// Every row `query` returns, read as `table` reads them.
    static func fetch<Row>(_ table: StoredTable<Row>, _ query: PostgresQuery, _ connection: PostgresConnection, _ logger: Logger) async throws -> [Row] {
        var rows: [Row] = []
        for try await row in try await connection.query(query, logger: logger) { rows.append(try table.read(PostgresRowReader(row: row.makeRandomAccess()))) }
        return rows
    }

    /// Every request's first read (authentication): a PostgreSQL that is not serving is a 503 from here on.
    public func token(id: String) async throws -> TokenRecord? {
        let table = ServerTables.token
        let logger = logger
        return try await connection { connection in
            let query: PostgresQuery = "SELECT \(unescaped: table.postgresSelectList()) FROM gateway_token WHERE id = \(id)"
            return try await Self.fetch(table, query, connection, logger).first
        }
    }

    public func tokens() async throws -> [TokenRecord] {
        let table = ServerTables.token
        var tokens: [TokenRecord] = []
        let rows = try await client.query(
            "SELECT \(unescaped: table.postgresSelectList()) FROM gateway_token ORDER BY tenant, gateway, created_at", logger: logger)
        for try await row in rows { tokens.append(try table.read(PostgresRowReader(row: row.makeRandomAccess()))) }
        return tokens
    }

    public func feed(tenant: String, after: Int64, limit: Int) async throws -> FeedSlice {
        let logger = logger
        return try await connection { connection in
            var head: Int64 = 0
            for try await value in try await connection.query("SELECT COALESCE(MAX(seq), 0) FROM change_feed WHERE tenant = \(tenant)", logger: logger)
                .decode(Int64.self)
            {
                head = value
            }
            var entries: [FeedSlice.Entry] = []
            let rows = try await connection.query(
                "SELECT seq, origin, document::text AS document FROM change_feed WHERE tenant = \(tenant) AND seq > \(after) ORDER BY seq LIMIT \(Int64(limit))",
                logger: logger)
            for try await row in rows {
                let row = row.makeRandomAccess()
                entries.append(
                    FeedSlice.Entry(
                        sequence: try row["seq"].decode(Int64.self), origin: try row["origin"].decode(String?.self),
                        change: try StoredJSON.decode(Change.self, try row["document"].decode(String.self), column: "change_feed.document")))
            }
            return FeedSlice(entries: entries, head: head)
        }
    }

    public func settings(tenant: String, serial: String) async throws -> DeviceSettingsResource? {
        let logger = logger
        return try await connection { connection in
            let devices: PostgresQuery =
                "SELECT \(unescaped: ServerTables.device.postgresSelectList()) FROM device WHERE tenant = \(tenant) AND serial = \(serial)"
            guard let device = try await Self.fetch(ServerTables.device, devices, connection, logger).first, !device.deleted else { return nil }
            let settings: PostgresQuery =
                "SELECT \(unescaped: ServerTables.settings.postgresSelectList()) FROM device_settings WHERE tenant = \(tenant) AND serial = \(serial)"
            let row = try await Self.fetch(ServerTables.settings, settings, connection, logger).first
            return (row ?? SettingsRow(serial: serial)).resource
        }
    }

    public func statistics(tenant: String) async throws -> TenantStatistics {
        let rows = try await client.query(
            """
            SELECT
                (SELECT COUNT(*) FROM device WHERE tenant = \(tenant) AND NOT deleted),
                (SELECT COUNT(*) FROM device WHERE tenant = \(tenant) AND deleted),
                (SELECT COUNT(*) FROM consumption_event WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM telemetry WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM device_settings WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM command_log WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM change_feed WHERE tenant = \(tenant))
            """, logger: logger)
        var statistics = TenantStatistics()
        for try await (devices, deleted, events, telemetry, settings, commands, feed) in rows.decode((Int64, Int64, Int64, Int64, Int64, Int64, Int64).self) {
            statistics.devices = Int(devices)
            statistics.deletedDevices = Int(deleted)
            statistics.events = Int(events)
            statistics.telemetry = Int(telemetry)
            statistics.settings = Int(settings)
            statistics.appliedCommands = Int(commands)
            statistics.feedEntries = Int(feed)
        }
        return statistics
    }
}

extension StoredTable {
    func postgresSelectList(prefix: String = "") -> String {
        columns.map { $0.kind.postgresSelect($0.name, prefix: prefix) }.joined(separator: ", ")
    }
}

/// A postgres-nio row as the tables read it; the column's kind says which Swift type to decode.
struct PostgresRowReader: StoredRowReader {
    let row: PostgresRandomAccessRow

    func value(_ column: String, _ kind: ColumnKind) throws -> StoredValue {
        guard row.contains(column) else { throw StorageCorruption(description: "no column \(column) in the row") }
        let cell = row[column]
        switch kind {
        case .text, .json, .uuid: return StoredValue(try cell.decode(String?.self))
        case .integer: return StoredValue(try cell.decode(Int?.self))
        case .bigint: return StoredValue(try cell.decode(Int64?.self))
        case .boolean: return try cell.decode(Bool?.self).map(StoredValue.bool) ?? .null
        case .bytes: return try cell.decode(ByteBuffer?.self).map { .bytes(Array(buffer: $0)) } ?? .null
        case .timestamp: return StoredValue(try cell.decode(Date?.self))
        }
    }
}
