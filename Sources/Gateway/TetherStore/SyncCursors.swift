import GRDB
import LinkProtocol
import TetherPrimitives

/// Named positions in backend feeds (e.g. the desired-settings change feed), so a restarted gateway resumes
/// reading where it stopped. Write a cursor in the same transaction as what was read up to it, or after it.
public struct SyncCursors: Sendable {
    public let database: GatewayDatabase

    public init(database: GatewayDatabase) { self.database = database }

    public func value(_ name: String) throws(StoreError) -> String? {
        try database.read { db in try SyncCursorRecord.fetchOne(db, key: name)?.value }
    }

    public func set(_ name: String, to value: String, at now: Timestamp) throws(StoreError) {
        try database.write { db in try SyncCursorRecord(name: name, value: value, updatedAt: now.nanoseconds).upsert(db) }
    }
}
