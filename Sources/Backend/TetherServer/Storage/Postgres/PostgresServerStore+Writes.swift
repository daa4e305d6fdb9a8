import Foundation
import Logging
import NIOCore
import PostgresNIO
import SyncContract
import TetherPrimitives

// Writes: a planned batch applied in the caller's transaction, one statement per table (rows as a JSON array
// read by `jsonb_to_recordset`), and the token writes.
extension PostgresServerStore {
    static func write(_ writes: BatchWrites, tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws {
        // Devices first: every other row references one.
        try await upsert(ServerTables.device, writes.devices.values, tenant: tenant, connection, logger)
        if !writes.deletedSettings.isEmpty {
            try await connection.query(
                "DELETE FROM device_settings WHERE tenant = \(tenant) AND serial = ANY(\(Array(writes.deletedSettings)))", logger: logger)
        }
        try await upsert(ServerTables.settings, writes.settings.values, tenant: tenant, connection, logger)
        if !writes.deletedEvents.isEmpty {
            let keys = Array(writes.deletedEvents)
            try await connection.query(
                """
                DELETE FROM consumption_event e USING unnest(\(keys.map(\.serial)), \(keys.map { Int64($0.bootCounter) }), \(keys.map(\.sequence)))
                    AS k(serial, boot_counter, sequence)
                WHERE e.tenant = \(tenant) AND e.serial = k.serial AND e.boot_counter = k.boot_counter AND e.sequence = k.sequence
                """, logger: logger)
        }
        try await upsert(ServerTables.event, writes.events.values, tenant: tenant, connection, logger)
        if !writes.deletedTelemetry.isEmpty {
            let keys = Array(writes.deletedTelemetry)
            try await connection.query(
                """
                DELETE FROM telemetry t USING unnest(\(keys.map(\.serial)), \(keys.map(\.kind.rawValue)), \(keys.map(\.receivedAt))) AS k(serial, kind, received_at)
                WHERE t.tenant = \(tenant) AND t.serial = k.serial AND t.kind = k.kind AND t.received_at = k.received_at
                """, logger: logger)
        }
        try await upsert(ServerTables.telemetry, writes.telemetry.values, tenant: tenant, connection, logger)
        try await insert(ServerTables.firmwareUpdate, writes.firmwareUpdates.values, tenant: tenant, conflict: "", connection, logger)
        try await insert(ServerTables.commandLog, writes.commandLog, tenant: tenant, conflict: "", connection, logger)
        // One statement per entry: the sequence numbers are drawn in feed order.
        for entry in writes.feed {
            try await connection.query(
                "INSERT INTO change_feed (tenant, origin, document) VALUES (\(tenant), \(entry.origin), \(try StoredJSON.encode(entry.change))::jsonb)",
                logger: logger)
        }
    }

    private static func upsert<Row>(
        _ table: StoredTable<Row>, _ rows: some Collection<Row>, tenant: String, _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        try await insert(table, rows, tenant: tenant, conflict: table.upsertClause, connection, logger)
    }

    /// `INSERT INTO table (tenant, columns) SELECT tenant, r.columns FROM jsonb_to_recordset(rows) AS r(column type, …)`
    /// followed by `conflict`.
    static func insert<Row>(
        _ table: StoredTable<Row>, _ rows: some Collection<Row>, tenant: String, conflict: String, _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        guard !rows.isEmpty else { return }
        let names = table.columns.map(\.name)
        let records = try StoredJSON.encode(try rows.map { PostgresRecordJSON(names: names, values: try table.storedValues(of: $0)) })
        let selected = table.columns.map { $0.kind.postgresFromRecord($0.name) }.joined(separator: ", ")
        let declared = table.columns.map { "\($0.name) \($0.kind.postgresRecordType)" }.joined(separator: ", ")
        let query: PostgresQuery = """
            INSERT INTO \(unescaped: table.name) (\(unescaped: table.insertColumns))
            SELECT \(tenant), \(unescaped: selected)
            FROM jsonb_to_recordset(\(records)::jsonb) AS r(\(unescaped: declared))
            \(unescaped: conflict)
            """
        try await connection.query(query, logger: logger)
    }

    public func insertToken(_ token: TokenRecord) async throws {
        let table = ServerTables.token
        var binds = PostgresBindings()
        for value in try table.storedValues(of: token) {
            switch value {
            case .null: binds.appendNull()
            case .integer(let integer): binds.append(integer)
            case .text(let text): binds.append(text)
            case .bool(let bool): binds.append(bool)
            case .bytes(let bytes): binds.append(ByteBuffer(bytes: bytes))
            case .date(let date): binds.append(date)
            }
        }
        let placeholders = (1...table.columns.count).map { "$\($0)" }.joined(separator: ", ")
        try await client.query(
            PostgresQuery(unsafeSQL: "INSERT INTO \(table.name) (\(table.insertColumns)) VALUES (\(placeholders))", binds: binds), logger: logger)
    }

    public func revokeToken(id: String, at date: Date) async throws -> Bool {
        let rows = try await client.query("UPDATE gateway_token SET revoked_at = \(date) WHERE id = \(id) AND revoked_at IS NULL RETURNING id", logger: logger)
        var revoked = false
        for try await _ in rows { revoked = true }
        return revoked
    }
}

/// One row as `jsonb_to_recordset` reads it: an object whose keys are the column names. Bytes travel as hex
/// (`decode(…, 'hex')` in the INSERT), JSON documents as their text (`::jsonb`).
private struct PostgresRecordJSON: Encodable {
    var names: [String]
    var values: [StoredValue]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in zip(names, values) {
            let key = Key(stringValue: name)
            switch value {
            case .null: try container.encodeNil(forKey: key)
            case .integer(let integer): try container.encode(integer, forKey: key)
            case .text(let text): try container.encode(text, forKey: key)
            case .bool(let bool): try container.encode(bool, forKey: key)
            case .bytes(let bytes): try container.encode(Hex.encode(bytes), forKey: key)
            case .date(let date): try container.encode(date.timeIntervalSince1970, forKey: key)
            }
        }
    }
}
