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

    @Test("SQLite's heap counter rises while a reader's cache fills, and stays within the cache bound")
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
        let before = try #require(SQLiteHeap.current())
        #expect(before.bytes > 0 && before.highwaterBytes >= before.bytes)
        // A full scan on the one reader: its cache takes at most 256 KiB, whatever the table's size.
        let total = try database.read { db in try Int.fetchOne(db, sql: "SELECT sum(length(body)) FROM filler") }
        #expect(total == 2000 * 4000)
        let after = try #require(SQLiteHeap.current())
        // The scan's pages stay cached (the counter rose), but far less than the 8 MB scanned.
        #expect(after.bytes > before.bytes)
        #expect(after.bytes - before.bytes < 1 << 20, "SQLite's heap grew by \(after.bytes - before.bytes) bytes scanning 8 MB with a 256 KiB reader cache")
    }
}
