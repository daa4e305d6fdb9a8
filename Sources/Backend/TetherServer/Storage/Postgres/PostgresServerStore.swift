import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import SyncContract

/// The PostgreSQL store, through postgres-nio's connection pool. Same schema and rules as `SQLiteServerStore`;
/// batches move in a few statements each (arrays and `jsonb_to_recordset`), not a statement per row.
///
/// Writers of one tenant are serialised by a transaction-scoped advisory lock on the tenant, taken first: the
/// idempotency check, the reads and the writes of a push then see each other in order, and the tenant's feed
/// sequence numbers commit in the order they were drawn, so a reader's cursor can never pass a change that
/// commits later. Tenants do not wait for each other.
///
/// `client` must be running (`run()`, a Service) while the store is used; `TetherServerApp` adds it to its
/// service group.
///
/// The schema is in PostgresSchema.swift, the reads in +Reads, the batch writes in +Writes; the tables' columns
/// are described once for both backends in `ServerTables`.
public final class PostgresServerStore: ServerStore {
    public let client: PostgresClient
    let logger: Logger

    public init(configuration: PostgresClient.Configuration, logger: Logger) {
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
    }

    // MARK: - Push and the operator's changes: lock, load, plan, write in one transaction

    public func push(_ commands: [PushCommand], by principal: GatewayPrincipal) async throws -> [CommandResult] {
        let logger = logger
        return try await transaction { connection in
            try await Self.lock(tenant: principal.tenant, connection, logger)
            var planner = BatchPlanner(state: try await Self.load(BatchKeys(commands: commands), tenant: principal.tenant, connection, logger))
            let results = commands.map { planner.apply($0, from: principal.gateway) }
            try await Self.write(planner.writes, tenant: principal.tenant, connection, logger)
            return results
        }
    }

    static func lock(tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(tenant), 0))", logger: logger)
    }

    public func replaceDesiredSettings(
        tenant: String, serial: String, desired: SettingsDocument, author: SettingsChangeAuthor, origin: String?, ifMatch: [Int64]?
    ) async throws -> BatchPlanner.SettingsOutcome {
        try await plan(tenant: tenant, serials: [serial]) { planner in
            planner.replaceDesired(serial: serial, desired: desired, author: author, origin: origin, ifMatch: ifMatch)
        }
    }

    public func upsertDevice(tenant: String, _ document: DevicePayload) async throws -> Int64 {
        try await plan(tenant: tenant, serials: [document.serial]) { planner in planner.upsertDevice(document, origin: nil) }
    }

    public func deleteDevice(tenant: String, serial: String) async throws -> Int64? {
        try await plan(tenant: tenant, serials: [serial]) { planner in planner.deleteDevice(serial: serial, origin: nil) }
    }

    private func plan<T: Sendable>(
        tenant: String, serials: Set<String>, _ body: @escaping @Sendable (inout BatchPlanner) -> T
    ) async throws -> T {
        let logger = logger
        return try await transaction { connection in
            try await Self.lock(tenant: tenant, connection, logger)
            var keys = BatchKeys()
            keys.serials = serials
            var planner = BatchPlanner(state: try await Self.load(keys, tenant: tenant, connection, logger))
            let outcome = body(&planner)
            try await Self.write(planner.writes, tenant: tenant, connection, logger)
            return outcome
        }
    }
}

/// How the PostgreSQL statements spell the kinds of `StoredValue`.
extension ColumnKind {
    /// The type a `jsonb_to_recordset` record declares for the column: JSON documents and bytes travel as text.
    var postgresRecordType: String {
        switch self {
        case .text, .json, .bytes: return "text"
        case .integer: return "integer"
        case .bigint: return "bigint"
        case .boolean: return "boolean"
        case .uuid: return "uuid"
        case .timestamp: return "timestamptz"
        }
    }

    /// The record's value as the column's type.
    func postgresFromRecord(_ column: String) -> String {
        switch self {
        case .json: return "r.\(column)::jsonb"
        case .bytes: return "decode(r.\(column), 'hex')"
        default: return "r.\(column)"
        }
    }

    /// The column in a SELECT list: JSON documents and UUIDs are read as text.
    func postgresSelect(_ column: String, prefix: String) -> String {
        switch self {
        case .json, .uuid: return "\(prefix)\(column)::text AS \(column)"
        default: return "\(prefix)\(column)"
        }
    }
}
