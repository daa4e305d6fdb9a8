import Foundation
import GRDB
import Testing
import TetherServer
import TetherSyncTesting

/// The schema each backend creates is what existing databases were created with: a shipped migration is never
/// edited, only appended to. These fingerprints pin the text; a change to them is a change to the schema and
/// needs a new migration, not a new fingerprint. (The expected values were taken from the v1 text before the
/// stores were split into schema, reads and writes; the v2 values when the health tables were appended, v1's left
/// as they were; the v3 values when the projection index was appended, v1's and v2's left as they were; the firmware
/// update table's values when it was appended, the others left as they were.)
@Suite("the schema text each backend creates")
struct SchemaFingerprintTests {
    @Test("SQLite: sqlite_master after migrating holds the v1, v2, v3 and v4 text, byte for byte")
    func sqlite() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteServerStore(path: directory + "/server.sqlite")
        try await store.migrate()
        // The store's own objects; SQLite's (sqlite_sequence, autoindexes) and GRDB's migration table are not ours.
        let rows = try await DatabaseQueue(path: directory + "/server.sqlite").read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT type, name, tbl_name, sql FROM sqlite_master
                    WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY name
                    """)
        }
        // v2 (health upload) made the objects named health_*; v1 made the others. Each is pinned on its own, so that
        // appending v2 left v1's pin as it was.
        // v3 (health projections) made the one index named in `v3Objects`.
        var v1 = ""
        var v2 = ""
        var v3 = ""
        var v4 = ""
        for row in rows {
            let fields: [String?] = [row["type"], row["name"], row["tbl_name"], row["sql"]]
            let line = fields.map { $0 ?? "" }.joined(separator: "\t") + "\n"
            let name = (row["name"] as String?) ?? ""
            if name.hasPrefix("firmware_update") {
                v4 += line
            } else if Self.v3Objects.contains(name) {
                v3 += line
            } else if name.hasPrefix("health_") {
                v2 += line
            } else {
                v1 += line
            }
        }
        #expect(v1.utf8.count == 3652)
        #expect(Self.fnv1a(v1) == "933c3c75b870da00")
        #expect(v2.utf8.count == 4179)
        #expect(Self.fnv1a(v2) == "684471cb7cf458d9")
        #expect(v3.utf8.count == 148)
        #expect(Self.fnv1a(v3) == "9eaebb93fb07b89a")
        // v4 (issue 16): the firmware_update table and its index.
        #expect(v4.utf8.count == 859)
        #expect(Self.fnv1a(v4) == "05c7657c3ac140e2")
    }

    static let v3Objects: Set<String> = ["health_sample_projection"]

    @Test("PostgreSQL: the migrations run the v1, v2, v3, v4 and v5 statements, byte for byte")
    func postgres() throws {
        let statements = PostgresServerStore.migrationStatements
        let v2Start = try #require(statements.firstIndex(of: "-- v2"))
        let v1 = statements[..<v2Start].joined(separator: "\n")
        #expect(v1.utf8.count == 3039)
        #expect(Self.fnv1a(v1) == "e3e210dc69324863")
        let v3Start = try #require(statements.firstIndex(of: "-- v3"))
        let v2 = statements[v2Start..<v3Start].joined(separator: "\n")
        #expect(v2.utf8.count == 3840)
        #expect(Self.fnv1a(v2) == "a5c335d647580040")
        let v4Start = try #require(statements.firstIndex(of: "-- v4"))
        let v3 = statements[v3Start..<v4Start].joined(separator: "\n")
        #expect(v3.utf8.count == 108)
        #expect(Self.fnv1a(v3) == "e402a1cfaa7122d0")
        // v4 (session 11): the export's index, uids in byte order.
        let v5Start = try #require(statements.firstIndex(of: "-- v5"))
        let v4 = statements[v4Start..<v5Start].joined(separator: "\n")
        #expect(v4.utf8.count == 121)
        #expect(Self.fnv1a(v4) == "76ec8bfbd01e92ad")
        // v5 (issue 16): the firmware_update table and its index.
        let v5 = statements[v5Start...].joined(separator: "\n")
        #expect(v5.utf8.count == 730)
        #expect(Self.fnv1a(v5) == "d45a39060da1090a")
    }

    /// FNV-1a, 64 bits: enough to notice an edit, and needs no crypto library in the test target.
    static func fnv1a(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
