import Foundation
import GRDBSQLite
import LinkProtocol
import TetherStore
import TetherPrimitives

/// The baseline: the same rows (an event and its outbox command per event, same payload, same ids) inserted
/// with the raw sqlite3 C API and prepared statements, all in one transaction, on a database with the same
/// schema and pragmas. It is what the hardware and SQLite can do with no per-event durability at all.
enum RawInsertBaseline {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Inserts `events` events for one device; returns the wall time of BEGIN … COMMIT.
    static func run(path: String, events: Int) throws -> Duration {
        // The schema (and a device with its boot, which the foreign keys need) comes from the real store.
        do {
            let database = try GatewayDatabase(path: path)
            var random = SplitMix64(seed: 1)
            _ = try ConsumptionService(database: database).apply(
                PersistBatch(id: 0, items: [.deviceInfo(BenchmarkEvents.deviceInfo(serial: "RAW-0"), negotiatedVersion: 2)]),
                at: WallClock.now(), using: &random)
        }
        var connection: OpaquePointer?
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db = connection else {
            throw Failure(description: "cannot open \(path)")
        }
        defer { sqlite3_close_v2(db) }
        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))") }
        }
        func prepare(_ sql: String) throws -> OpaquePointer {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
            }
            return statement
        }
        try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        let deviceId = Int64(1)
        let insertEvent = try prepare("""
            INSERT INTO consumptionEvent (deviceId, bootCounter, sequence, ticks, utcNanoseconds, uncertaintyNanoseconds, durationMilliseconds, intensity, receivedAt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (deviceId, bootCounter, sequence) DO NOTHING
            """)
        let insertCommand = try prepare("""
            INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, status, attempts, nextAttemptAt, createdAt, updatedAt)
            VALUES (?, 'consumptionEvent', ?, 'create', ?, 'pending', 0, ?, ?, ?)
            """)
        defer {
            sqlite3_finalize(insertEvent)
            sqlite3_finalize(insertCommand)
        }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        var random = SplitMix64(seed: 2)
        let clock = ContinuousClock()
        let started = clock.now
        try exec("BEGIN IMMEDIATE")
        for sequence in 0..<Int64(events) {
            let now = WallClock.now()
            let hit = BenchmarkEvents.hit(serial: "RAW-0", sequence: sequence, at: now)
            let time = hit.time ?? TimeEstimate(utcNanoseconds: 0, uncertaintyNanoseconds: 0)
            sqlite3_bind_int64(insertEvent, 1, deviceId)
            sqlite3_bind_int64(insertEvent, 2, Int64(hit.key.bootCounter))
            sqlite3_bind_int64(insertEvent, 3, hit.key.sequence)
            sqlite3_bind_int64(insertEvent, 4, hit.ticks)
            sqlite3_bind_int64(insertEvent, 5, time.utcNanoseconds)
            sqlite3_bind_int64(insertEvent, 6, time.uncertaintyNanoseconds)
            sqlite3_bind_int64(insertEvent, 7, Int64(hit.durationMilliseconds))
            sqlite3_bind_int64(insertEvent, 8, Int64(hit.intensity))
            sqlite3_bind_int64(insertEvent, 9, hit.receivedAt.nanoseconds)
            guard sqlite3_step(insertEvent) == SQLITE_DONE else { throw Failure(description: String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(insertEvent)
            let id = UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &random))
            let entityId = "\(hit.key.serial)/\(hit.key.bootCounter)/\(hit.key.sequence)"
            let payload = BenchmarkEvents.payload(hit)
            sqlite3_bind_text(insertCommand, 1, id, -1, transient)
            sqlite3_bind_text(insertCommand, 2, entityId, -1, transient)
            sqlite3_bind_text(insertCommand, 3, payload, -1, transient)
            sqlite3_bind_int64(insertCommand, 4, now.nanoseconds)
            sqlite3_bind_int64(insertCommand, 5, now.nanoseconds)
            sqlite3_bind_int64(insertCommand, 6, now.nanoseconds)
            guard sqlite3_step(insertCommand) == SQLITE_DONE else { throw Failure(description: String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(insertCommand)
        }
        try exec("COMMIT")
        return started.duration(to: clock.now)
    }
}

/// The events both sides insert.
enum BenchmarkEvents {
    static func deviceInfo(serial: String) -> DeviceInfo {
        DeviceInfo(hardwareRevision: 3, firmware: FirmwareVersion(major: 2, minor: 0, patch: 1), bootCounter: 1, capabilities: [.battery], versions: 1...2, serial: serial)
    }

    static func hit(serial: String, sequence: Int64, at now: Timestamp) -> StoredHit {
        StoredHit(
            key: EventKey(serial: serial, bootCounter: 1, sequence: sequence), ticks: 1_000 + sequence * 250,
            durationMilliseconds: UInt16(truncatingIfNeeded: 300 + sequence % 3000), intensity: UInt8(sequence % 101), receivedAt: now,
            time: TimeEstimate(utcNanoseconds: now.nanoseconds - 40_000_000, uncertaintyNanoseconds: 3_500_000))
    }

    /// The outbox payload, in the store's shape (see the rows `ConsumptionService` writes).
    static func payload(_ hit: StoredHit) -> String {
        let time = hit.time
        return #"{"serial":"\#(hit.key.serial)","bootCounter":\#(hit.key.bootCounter),"sequence":\#(hit.key.sequence),"ticks":\#(hit.ticks),"#
            + #""utcNanoseconds":\#(time.map { String($0.utcNanoseconds) } ?? "null"),"uncertaintyNanoseconds":\#(time.map { String($0.uncertaintyNanoseconds) } ?? "null"),"#
            + #""durationMilliseconds":\#(hit.durationMilliseconds),"intensity":\#(hit.intensity),"receivedAt":\#(hit.receivedAt.nanoseconds)}"#
    }
}
