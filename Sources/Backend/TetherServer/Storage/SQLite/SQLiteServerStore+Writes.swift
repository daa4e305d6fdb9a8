import Foundation
import GRDB
import SyncContract

// Writes: a planned batch applied in the caller's transaction (rows, deletions, the idempotency records and the
// feed), and the token writes.
extension SQLiteServerStore {
    static func write(_ writes: BatchWrites, tenant: String, _ db: Database) throws {
        // Devices first: every other row references one.
        try upsert(ServerTables.device, writes.devices.values, tenant: tenant, db)
        let deleteSettings = try db.cachedStatement(sql: "DELETE FROM device_settings WHERE tenant = ? AND serial = ?")
        for serial in writes.deletedSettings { try deleteSettings.execute(arguments: [tenant, serial]) }
        try upsert(ServerTables.settings, writes.settings.values, tenant: tenant, db)
        let deleteEvent = try db.cachedStatement(sql: "DELETE FROM consumption_event WHERE tenant = ? AND serial = ? AND boot_counter = ? AND sequence = ?")
        for key in writes.deletedEvents { try deleteEvent.execute(arguments: [tenant, key.serial, key.bootCounter, key.sequence]) }
        try upsert(ServerTables.event, writes.events.values, tenant: tenant, db)
        let deleteTelemetry = try db.cachedStatement(sql: "DELETE FROM telemetry WHERE tenant = ? AND serial = ? AND kind = ? AND received_at = ?")
        for key in writes.deletedTelemetry { try deleteTelemetry.execute(arguments: [tenant, key.serial, key.kind.rawValue, key.receivedAt]) }
        try upsert(ServerTables.telemetry, writes.telemetry.values, tenant: tenant, db)
        try insert(ServerTables.firmwareUpdate, writes.firmwareUpdates.values, tenant: tenant, db)
        try insert(ServerTables.commandLog, writes.commandLog, tenant: tenant, db)
        let feed = try db.cachedStatement(sql: "INSERT INTO change_feed (tenant, origin, document) VALUES (?, ?, ?)")
        for entry in writes.feed { try feed.execute(arguments: [tenant, entry.origin, try StoredJSON.encode(entry.change)]) }
    }

    private static func upsert<Row>(_ table: StoredTable<Row>, _ rows: some Collection<Row>, tenant: String, _ db: Database) throws {
        try execute(table.sqliteInsert + " " + table.upsertClause, table, rows, tenant: tenant, db)
    }

    static func insert<Row>(_ table: StoredTable<Row>, _ rows: some Collection<Row>, tenant: String?, _ db: Database) throws {
        try execute(table.sqliteInsert, table, rows, tenant: tenant, db)
    }

    private static func execute<Row>(_ sql: String, _ table: StoredTable<Row>, _ rows: some Collection<Row>, tenant: String?, _ db: Database) throws {
        guard !rows.isEmpty else { return }
        let statement = try db.cachedStatement(sql: sql)
        for row in rows {
            let values = (table.scopedByTenant ? [StoredValue.text(tenant ?? "")] : []) + (try table.storedValues(of: row))
            try statement.execute(arguments: StatementArguments(values.map(\.sqlite)))
        }
    }

    public func insertToken(_ token: TokenRecord) async throws {
        try await write { db in try Self.insert(ServerTables.token, [token], tenant: nil, db) }
    }

    public func revokeToken(id: String, at date: Date) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "UPDATE gateway_token SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [date.timeIntervalSince1970, id])
            return db.changesCount > 0
        }
    }
}

extension StoredTable {
    /// `INSERT INTO table (columns) VALUES (?, …)`
    var sqliteInsert: String {
        let count = columns.count + (scopedByTenant ? 1 : 0)
        return "INSERT INTO \(name) (\(insertColumns)) VALUES (\(Array(repeating: "?", count: count).joined(separator: ", ")))"
    }
}
