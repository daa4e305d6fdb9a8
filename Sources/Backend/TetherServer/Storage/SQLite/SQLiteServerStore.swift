import Foundation
import GRDB
import SyncContract

/// The default store: one SQLite file in WAL mode with `synchronous = FULL` (an `applied` answer is on disk),
/// through GRDB. A process has one writer; the pool's readers serve pulls and settings reads concurrently.
///
/// The schema is in SQLiteSchema.swift, the reads in +Reads, the batch writes in +Writes; the tables' columns
/// are described once for both backends in `ServerTables`.
public final class SQLiteServerStore: ServerStore {
    public let path: String
    let pool: DatabasePool

    public init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.label = "tether-server"
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // GRDB's pool switches its writer to `synchronous = NORMAL` when it enables WAL, after `prepareDatabase`
        // ran: without this, a commit acknowledged as `applied` could be lost to a power cut. Set it again on the
        // writer, and check it took.
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            let level = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            guard level == 2 else { throw StoreSetupError(description: "the writer of \(path) runs with synchronous=\(level.map(String.init) ?? "?"), not FULL (2)") }
        }
    }

    /// One write transaction, with a full disk reported as `StorageFull` (SQLite has rolled the transaction back).
    func write<T: Sendable>(_ updates: @Sendable @escaping (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(updates)
        } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_FULL {
            throw StorageFull(description: "the server's database \(path) cannot grow: \(error.message ?? "\(error.resultCode)")")
        }
    }

    /// A setup the server cannot run with.
    public struct StoreSetupError: Error, CustomStringConvertible {
        public var description: String
    }

    /// `PRAGMA synchronous` of the connection that commits (2 = FULL): what durability actually is.
    public func writerSynchronous() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    // MARK: - Push and the operator's changes: load, plan, write in one transaction

    public func push(_ commands: [PushCommand], by principal: GatewayPrincipal) async throws -> [CommandResult] {
        try await write { db in
            var planner = BatchPlanner(state: try Self.load(BatchKeys(commands: commands), tenant: principal.tenant, db))
            let results = commands.map { planner.apply($0, from: principal.gateway) }
            try Self.write(planner.writes, tenant: principal.tenant, db)
            return results
        }
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

    private func plan<T: Sendable>(tenant: String, serials: Set<String>, _ body: @Sendable @escaping (inout BatchPlanner) -> T) async throws -> T {
        try await write { db in
            var keys = BatchKeys()
            keys.serials = serials
            var planner = BatchPlanner(state: try Self.load(keys, tenant: tenant, db))
            let outcome = body(&planner)
            try Self.write(planner.writes, tenant: tenant, db)
            return outcome
        }
    }
}
