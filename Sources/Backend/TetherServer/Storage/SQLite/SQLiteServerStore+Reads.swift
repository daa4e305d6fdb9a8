import Foundation
import GRDB
import SyncContract

// Reads: a batch's current rows before the planner runs, and the pull, settings, token and statistics reads.
extension SQLiteServerStore {
    static func load(_ keys: BatchKeys, tenant: String, _ db: Database) throws -> BatchState {
        var state = BatchState()
        for id in keys.commandIDs where state.logged[id] == nil {
            state.logged[id] = try fetchOne(ServerTables.commandLog, tenant: tenant, key: [.text(id.uuidString.lowercased())], db)
        }
        for serial in keys.serials {
            state.devices[serial] = try fetchOne(ServerTables.device, tenant: tenant, key: [.text(serial)], db)
            state.settings[serial] = try fetchOne(ServerTables.settings, tenant: tenant, key: [.text(serial)], db)
        }
        for key in keys.events {
            state.events[key] = try fetchOne(
                ServerTables.event, tenant: tenant, key: [.text(key.serial), StoredValue(key.bootCounter), .integer(key.sequence)], db)
        }
        for key in keys.telemetry {
            state.telemetry[key] = try fetchOne(
                ServerTables.telemetry, tenant: tenant, key: [.text(key.serial), .text(key.kind.rawValue), .integer(key.receivedAt)], db)
        }
        for uid in keys.firmwareUpdates {
            state.firmwareUpdates[uid] = try fetchOne(ServerTables.firmwareUpdate, tenant: tenant, key: [.text(uid)], db)
        }
        return state
    }

    /// The row of `table` with the tenant and the key (in the order of `table.key`), if any.
    static func fetchOne<Value>(_ table: StoredTable<Value>, tenant: String?, key: [StoredValue], _ db: Database) throws -> Value? {
        let statement = try db.cachedStatement(sql: table.sqliteSelectByKey)
        let arguments = (table.scopedByTenant ? [StoredValue.text(tenant ?? "")] : []) + key
        guard let row = try Row.fetchOne(statement, arguments: StatementArguments(arguments.map(\.sqlite))) else { return nil }
        return try table.read(SQLiteRowReader(row: row))
    }

    public func token(id: String) async throws -> TokenRecord? {
        try await pool.read { db in try Self.fetchOne(ServerTables.token, tenant: nil, key: [.text(id)], db) }
    }

    public func tokens() async throws -> [TokenRecord] {
        try await pool.read { db in
            let table = ServerTables.token
            return try Row.fetchAll(db, sql: "SELECT \(table.sqliteSelectList) FROM \(table.name) ORDER BY tenant, gateway, created_at")
                .map { try table.read(SQLiteRowReader(row: $0)) }
        }
    }

    public func feed(tenant: String, after: Int64, limit: Int) async throws -> FeedSlice {
        try await pool.read { db in
            let head = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM change_feed WHERE tenant = ?", arguments: [tenant]) ?? 0
            let rows = try Row.fetchAll(
                db, sql: "SELECT seq, origin, document FROM change_feed WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?", arguments: [tenant, after, limit])
            let entries = try rows.map { row in
                FeedSlice.Entry(sequence: row["seq"], origin: row["origin"], change: try StoredJSON.decode(Change.self, row["document"], column: "change_feed.document"))
            }
            return FeedSlice(entries: entries, head: head)
        }
    }

    public func settings(tenant: String, serial: String) async throws -> DeviceSettingsResource? {
        try await pool.read { db in
            guard let device = try Self.fetchOne(ServerTables.device, tenant: tenant, key: [.text(serial)], db), !device.deleted else { return nil }
            let row = try Self.fetchOne(ServerTables.settings, tenant: tenant, key: [.text(serial)], db)
            return (row ?? SettingsRow(serial: serial)).resource
        }
    }

    public func firmwareUpdates(tenant: String, address: String?) async throws -> [FirmwareUpdateRow] {
        try await pool.read { db in
            let table = ServerTables.firmwareUpdate
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT \(table.sqliteSelectList) FROM firmware_update WHERE tenant = ? AND (? IS NULL OR address = ?)
                    ORDER BY finished_at DESC, uid DESC
                    """,
                arguments: [tenant, address, address]
            ).map { try table.read(SQLiteRowReader(row: $0)) }
        }
    }

    public func statistics(tenant: String) async throws -> TenantStatistics {
        try await pool.read { db in
            var statistics = TenantStatistics()
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db, sql: sql, arguments: [tenant]) ?? 0 }
            statistics.devices = try count("SELECT COUNT(*) FROM device WHERE tenant = ? AND deleted = 0")
            statistics.deletedDevices = try count("SELECT COUNT(*) FROM device WHERE tenant = ? AND deleted = 1")
            statistics.events = try count("SELECT COUNT(*) FROM consumption_event WHERE tenant = ?")
            statistics.telemetry = try count("SELECT COUNT(*) FROM telemetry WHERE tenant = ?")
            statistics.settings = try count("SELECT COUNT(*) FROM device_settings WHERE tenant = ?")
            statistics.appliedCommands = try count("SELECT COUNT(*) FROM command_log WHERE tenant = ?")
            statistics.feedEntries = try count("SELECT COUNT(*) FROM change_feed WHERE tenant = ?")
            return statistics
        }
    }
}

extension StoredTable {
    var sqliteSelectList: String { columns.map(\.name).joined(separator: ", ") }

    /// `SELECT columns FROM table WHERE tenant = ? AND key = ? …`
    var sqliteSelectByKey: String {
        let keys = (scopedByTenant ? ["tenant"] : []) + key.map(\.name)
        return "SELECT \(sqliteSelectList) FROM \(name) WHERE " + keys.map { "\($0) = ?" }.joined(separator: " AND ")
    }
}

/// A GRDB row as the tables read it. A column the SELECT did not name is corruption, not NULL.
struct SQLiteRowReader: StoredRowReader {
    let row: Row

    func value(_ column: String, _ kind: ColumnKind) throws -> StoredValue {
        guard row.hasColumn(column) else { throw StorageCorruption(description: "no column \(column) in the row") }
        let value: DatabaseValue = row[column]
        switch value.storage {
        case .null: return .null
        // Timestamps are REAL seconds since 1970 (gateway_token.created_at).
        case .int64(let integer): return kind == .timestamp ? .date(Date(timeIntervalSince1970: Double(integer))) : .integer(integer)
        case .double(let double):
            guard kind == .timestamp else { throw StorageCorruption(description: "\(column) holds a REAL") }
            return .date(Date(timeIntervalSince1970: double))
        case .string(let text): return .text(text)
        case .blob(let data): return .bytes([UInt8](data))
        }
    }
}

extension StoredValue {
    var sqlite: DatabaseValue {
        switch self {
        case .null: return .null
        case .integer(let value): return value.databaseValue
        case .text(let value): return value.databaseValue
        case .bool(let value): return value.databaseValue
        case .bytes(let value): return Data(value).databaseValue
        case .date(let value): return value.timeIntervalSince1970.databaseValue
        }
    }
}
