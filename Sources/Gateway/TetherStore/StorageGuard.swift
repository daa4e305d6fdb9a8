import Foundation
import GRDB

/// Where the gateway stops accepting new data (§8.10). Both limits are checked before every write of device
/// data; at either, batches are refused with `storageFull`, the devices keep their events and retry, and nothing
/// unsynced is ever deleted to make room. Retention (`Retention`) frees room by pruning synced data only.
public struct StorageLimits: Hashable, Sendable {
    /// Cap on the pages in use in the database file (`(page_count − freelist_count) · page_size`). Pages freed by
    /// pruning are reused by SQLite before the file grows, so the cap follows what is actually stored.
    public var maximumDatabaseBytes: Int64?
    /// Free space the file system must keep for everything else on the gateway (logs, updates, the WAL).
    public var minimumFreeDiskBytes: Int64?

    public init(maximumDatabaseBytes: Int64? = nil, minimumFreeDiskBytes: Int64? = 64 << 20) {
        self.maximumDatabaseBytes = maximumDatabaseBytes
        self.minimumFreeDiskBytes = minimumFreeDiskBytes
    }
}

/// Whether the store is taking new data, for logs and `tether status`.
public enum StorageStatus: Hashable, Sendable, CustomStringConvertible {
    case accepting
    /// New batches are refused and not acknowledged until the condition clears.
    case refusing(StoreError)

    public var description: String {
        switch self {
        case .accepting: "accepting"
        case .refusing(let error): "refusing new data (\(error))"
        }
    }
}

/// Checks the limits inside the writer, just before a transaction, so that a cap reached by the previous
/// transaction refuses the next one.
struct StorageGuard: Sendable {
    let limits: StorageLimits
    /// The database file's directory, whose file system the floor applies to; `nil` in memory.
    let directory: String?

    init(database: GatewayDatabase) {
        limits = database.configuration.limits
        directory = database.path.map { ($0 as NSString).deletingLastPathComponent }.map { $0.isEmpty ? "." : $0 }
    }

    func check(_ db: Database) throws(StoreError) {
        if let cap = limits.maximumDatabaseBytes {
            let used: Int64
            do {
                used = try Self.databaseBytes(db)
            } catch {
                throw StoreError(error)
            }
            if used >= cap {
                throw StoreError(.databaseCapReached, "database uses \(used) bytes, cap \(cap)")
            }
        }
        if let floor = limits.minimumFreeDiskBytes, let directory, let free = Self.freeDiskBytes(at: directory), free < floor {
            throw StoreError(.diskFloorReached, "\(free) bytes free on \(directory), floor \(floor)")
        }
    }

    /// Bytes in pages that hold data (free pages excluded).
    static func databaseBytes(_ db: Database) throws -> Int64 {
        let pages = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA page_count")) ?? 0
        let free = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA freelist_count")) ?? 0
        let size = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA page_size")) ?? 0
        return (pages - free) * size
    }

    /// Bytes available to an unprivileged writer on the file system holding `path` (`statvfs`), `nil` if unknown.
    static func freeDiskBytes(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let (bytes, overflow) = Int64(info.f_bavail).multipliedReportingOverflow(by: Int64(info.f_frsize))
        return overflow ? .max : bytes
    }
}
