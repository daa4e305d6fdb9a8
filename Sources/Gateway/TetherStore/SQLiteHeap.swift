import GRDB
import GRDBSQLite

/// The memory SQLite itself holds in this process: page caches, prepared statements, schema, and scratch space.
/// Process-wide (every connection of every database), from `sqlite3_status64(SQLITE_STATUS_MEMORY_USED)`
/// (https://sqlite.org/c3ref/c_status_malloc_count.html). It lets a resident-memory figure be split into what
/// SQLite keeps, which its cache sizes bound, and the rest.
public struct SQLiteHeap: Hashable, Sendable {
    /// Bytes SQLite has allocated now.
    public var bytes: Int64
    /// The most it has held at once since the process started.
    public var highwaterBytes: Int64

    /// Reads the counters; `nil` when SQLite was built without memory statistics (SQLITE_DEFAULT_MEMSTATUS=0).
    public static func current() -> SQLiteHeap? {
        var current: sqlite3_int64 = 0
        var highwater: sqlite3_int64 = 0
        guard sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &current, &highwater, 0) == SQLITE_OK else { return nil }
        // Without memory statistics SQLite answers OK and reports zero; a process with a database open has more.
        guard highwater > 0 else { return nil }
        return SQLiteHeap(bytes: Int64(current), highwaterBytes: Int64(highwater))
    }

    /// Bytes of page cache one connection holds now (`sqlite3_db_status(SQLITE_DBSTATUS_CACHE_USED)`,
    /// https://sqlite.org/c3ref/c_dbstatus_options.html): unlike `current()`, this connection's alone.
    public static func pageCacheBytes(of db: Database) -> Int {
        var current: Int32 = 0
        var highwater: Int32 = 0
        guard sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &current, &highwater, 0) == SQLITE_OK else { return 0 }
        return Int(current)
    }
}
