import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

/// The store's memory bounds: reader connections keep small page caches, and SQLite's own heap is readable.
@Suite("Connection memory: reader cache size, reader count, SQLite's heap counter")
struct ConnectionMemoryTests {
    @Test("readers run with the configured cache_size; the writer keeps SQLite's default")
    func readerCache() throws {
        let directory = try TemporaryDirectory()
        var configuration = GatewayDatabase.Configuration()
        configuration.readerCacheKiB = 768
        let database = try GatewayDatabase(path: directory.file("cache.sqlite"), configuration: configuration)
        // A negative cache_size is KiB (https://sqlite.org/pragma.html#pragma_cache_size); -2000 is SQLite's default.
        #expect(try database.read { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") } == -768)
        #expect(try database.write { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") } == -2000)
    }

    @Test("without a reader cache size, readers keep SQLite's default too")
    func defaultReaderCache() throws {
        let directory = try TemporaryDirectory()
        var configuration = GatewayDatabase.Configuration()
        configuration.readerCacheKiB = nil
        let database = try GatewayDatabase(path: directory.file("cache.sqlite"), configuration: configuration)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") } == -2000)
    }

    /// The reader's own page cache (`sqlite3_db_status(SQLITE_DBSTATUS_CACHE_USED)`, per connection) rises with a full
    /// scan and stays within its 256 KiB bound. Not `SQLiteHeap`'s process-wide counter: other tests' connections
    /// open and close beside this one, and a fresh-clone CI run once saw that counter fall across this scan.
    @Test("a reader's page cache fills with a scan and stays within its bound; SQLite's heap counter reads")
    func heapFollowsTheCache() throws {
        let directory = try TemporaryDirectory()
        var configuration = GatewayDatabase.Configuration()
        configuration.readerCacheKiB = 256
        configuration.maximumReaderCount = 1
        let database = try GatewayDatabase(path: directory.file("heap.sqlite"), configuration: configuration)
        // About 8 MB of rows: far more than the reader's 256 KiB cache.
        let blob = [UInt8](repeating: 0xA5, count: 4000)
        try database.write { db in
            try db.execute(sql: "CREATE TABLE filler (id INTEGER PRIMARY KEY, body BLOB)")
            for id in 0..<2000 { try db.execute(sql: "INSERT INTO filler (id, body) VALUES (?, ?)", arguments: [id, Data(blob)]) }
        }
        let heap = try #require(SQLiteHeap.current())
        #expect(heap.bytes > 0 && heap.highwaterBytes >= heap.bytes)
        // A full scan on the one reader, its cache measured before and after on that connection.
        let (before, total, after) = try database.read { db in
            let before = SQLiteHeap.pageCacheBytes(of: db)
            let total = try Int.fetchOne(db, sql: "SELECT sum(length(body)) FROM filler")
            return (before, total, SQLiteHeap.pageCacheBytes(of: db))
        }
        #expect(total == 2000 * 4000)
        // The scan's pages stay cached (the cache grew), but no more than the 256 KiB bound (and its page headers).
        #expect(after > before, "cache \(before) → \(after) bytes")
        #expect(after < 512 << 10, "the reader's cache holds \(after) bytes after scanning 8 MB with a 256 KiB cache_size")
    }

}
