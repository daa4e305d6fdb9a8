import Foundation
import SyncContract

// Each table's columns, described once for both backends: a column's name, its kind, and how its value comes out
// of a row; and how a row is read back from its columns. The backends build their INSERT, ON CONFLICT and SELECT
// column lists from this and only translate `StoredValue` to and from their drivers' types. The CREATE TABLE
// statements are not generated from it: a shipped migration is never edited (SQLiteSchema, PostgresSchema).

/// A column value in a form both backends bind: JSON columns as their encoded text, UUIDs as lowercase text.
enum StoredValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)
    case bool(Bool)
    case bytes([UInt8])
    case date(Date)
}

/// What a column holds; each backend maps it to its own SQL type (the PostgreSQL names are in `PostgresDialect`).
enum ColumnKind: Sendable {
    case text, integer, bigint, boolean, json, bytes, uuid, timestamp
}

struct StoredColumn<Row>: Sendable {
    let name: String
    let kind: ColumnKind
    let value: @Sendable (Row) throws -> StoredValue

    init(_ name: String, _ kind: ColumnKind, _ value: @escaping @Sendable (Row) throws -> StoredValue) {
        self.name = name
        self.kind = kind
        self.value = value
    }
}

/// A stored row as a backend hands it over: a column's value by name (JSON and UUID columns as text).
protocol StoredRowReader {
    func value(_ column: String, _ kind: ColumnKind) throws -> StoredValue
}

struct StoredTable<Row>: Sendable {
    let name: String
    /// Whether the table's key starts with the tenant, the scope of every store call (not a field of the row).
    let scopedByTenant: Bool
    /// The primary key after the tenant: the conflict target of an upsert and the lookup of a load.
    let key: [StoredColumn<Row>]
    let values: [StoredColumn<Row>]
    let read: @Sendable (StoredRowReader) throws -> Row

    var columns: [StoredColumn<Row>] { key + values }

    /// The row's values in the order of `columns`.
    func storedValues(of row: Row) throws -> [StoredValue] { try columns.map { try $0.value(row) } }

    /// The column list of an INSERT, the tenant first when the table is scoped by it.
    var insertColumns: String { ((scopedByTenant ? ["tenant"] : []) + columns.map(\.name)).joined(separator: ", ") }

    /// `ON CONFLICT (key) DO UPDATE SET v = excluded.v, …`: the same text in both dialects.
    var upsertClause: String {
        let target = ((scopedByTenant ? ["tenant"] : []) + key.map(\.name)).joined(separator: ", ")
        let set = values.map { "\($0.name) = excluded.\($0.name)" }.joined(separator: ", ")
        return "ON CONFLICT (\(target)) DO UPDATE SET \(set)"
    }
}

// MARK: - Reading values back

extension StoredRowReader {
    func text(_ column: String, kind: ColumnKind = .text) throws -> String {
        guard let value = try optionalText(column, kind: kind) else { throw StorageCorruption(description: "\(column) is NULL") }
        return value
    }

    func optionalText(_ column: String, kind: ColumnKind = .text) throws -> String? {
        switch try value(column, kind) {
        case .null: return nil
        case .text(let text): return text
        case let other: throw StorageCorruption(description: "\(column) holds \(other), not text")
        }
    }

    func optionalInteger(_ column: String, kind: ColumnKind = .bigint) throws -> Int64? {
        switch try value(column, kind) {
        case .null: return nil
        case .integer(let value): return value
        case let other: throw StorageCorruption(description: "\(column) holds \(other), not an integer")
        }
    }

    func integer(_ column: String, kind: ColumnKind = .bigint) throws -> Int64 {
        guard let value = try optionalInteger(column, kind: kind) else { throw StorageCorruption(description: "\(column) is NULL") }
        return value
    }

    func optionalInt(_ column: String) throws -> Int? {
        guard let value = try optionalInteger(column, kind: .integer) else { return nil }
        guard let int = Int(exactly: value) else { throw StorageCorruption(description: "\(column) = \(value) is out of range") }
        return int
    }

    func int(_ column: String) throws -> Int {
        guard let value = try optionalInt(column) else { throw StorageCorruption(description: "\(column) is NULL") }
        return value
    }

    func bool(_ column: String) throws -> Bool {
        switch try value(column, .boolean) {
        case .bool(let value): return value
        // SQLite has no boolean type: the CHECK keeps it to 0 or 1.
        case .integer(0): return false
        case .integer(1): return true
        case let other: throw StorageCorruption(description: "\(column) holds \(other), not a boolean")
        }
    }

    func bytes(_ column: String) throws -> [UInt8] {
        guard case .bytes(let bytes) = try value(column, .bytes) else { throw StorageCorruption(description: "\(column) holds no bytes") }
        return bytes
    }

    func optionalDate(_ column: String) throws -> Date? {
        switch try value(column, .timestamp) {
        case .null: return nil
        case .date(let date): return date
        case let other: throw StorageCorruption(description: "\(column) holds \(other), not a timestamp")
        }
    }

    func json<T: Decodable>(_ type: T.Type, _ column: String, table: String) throws -> T {
        try StoredJSON.decode(type, try text(column, kind: .json), column: "\(table).\(column)")
    }

    func optionalJSON<T: Decodable>(_ type: T.Type, _ column: String, table: String) throws -> T? {
        try StoredJSON.decodeIfPresent(type, try optionalText(column, kind: .json), column: "\(table).\(column)")
    }
}

extension StoredValue {
    init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    init(_ value: Int64?) { self = value.map(StoredValue.integer) ?? .null }
    init(_ value: String?) { self = value.map(StoredValue.text) ?? .null }
    init(_ value: Date?) { self = value.map(StoredValue.date) ?? .null }
    static func json<T: Encodable>(_ value: T?) throws -> StoredValue { try value.map { .text(try StoredJSON.encode($0)) } ?? .null }
}
