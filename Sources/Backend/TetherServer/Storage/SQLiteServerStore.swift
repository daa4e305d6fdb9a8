import Foundation
import GRDB
import SyncContract

/// The default store: one SQLite file in WAL mode with `synchronous = FULL` (an `applied` answer is on disk),
/// through GRDB. A process has one writer; the pool's readers serve pulls and settings reads concurrently.
public final class SQLiteServerStore: ServerStore {
    public let path: String
    private let pool: DatabasePool

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

    /// A setup the server cannot run with.
    public struct StoreSetupError: Error, CustomStringConvertible {
        public var description: String
    }

    /// `PRAGMA synchronous` of the connection that commits (2 = FULL): what durability actually is.
    public func writerSynchronous() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    public func migrate() async throws {
        try Self.migrator.migrate(pool)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // Released with the first server. A migration is never edited once shipped: append a new one.
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE gateway_token (
                    id TEXT PRIMARY KEY CHECK (length(id) = 16),
                    secret_hash BLOB NOT NULL CHECK (length(secret_hash) = 32),
                    tenant TEXT NOT NULL CHECK (length(tenant) BETWEEN 1 AND 128),
                    gateway TEXT NOT NULL CHECK (length(gateway) BETWEEN 1 AND 128),
                    created_at REAL NOT NULL,
                    revoked_at REAL
                ) STRICT;

                CREATE TABLE device (
                    tenant TEXT NOT NULL,
                    serial TEXT NOT NULL CHECK (length(serial) BETWEEN 1 AND 32),
                    hardware_revision INTEGER CHECK (hardware_revision BETWEEN 0 AND 255),
                    firmware_version TEXT,
                    protocol_version INTEGER CHECK (protocol_version BETWEEN 1 AND 255),
                    capabilities INTEGER NOT NULL CHECK (capabilities BETWEEN 0 AND 65535),
                    pairing_state TEXT NOT NULL CHECK (pairing_state IN ('discovered', 'paired', 'unpaired', 'blocked')),
                    version INTEGER NOT NULL CHECK (version >= 1),
                    deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
                    PRIMARY KEY (tenant, serial)
                ) STRICT, WITHOUT ROWID;

                CREATE TABLE device_settings (
                    tenant TEXT NOT NULL,
                    serial TEXT NOT NULL,
                    version INTEGER NOT NULL CHECK (version >= 0),
                    desired TEXT CHECK (desired IS NULL OR json_valid(desired)),
                    changed_by TEXT CHECK (changed_by IN ('backend', 'technician')),
                    reported TEXT CHECK (reported IS NULL OR json_valid(reported)),
                    reported_version INTEGER,
                    conflicts TEXT NOT NULL CHECK (json_valid(conflicts)),
                    PRIMARY KEY (tenant, serial),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial),
                    CHECK ((desired IS NULL) = (changed_by IS NULL))
                ) STRICT, WITHOUT ROWID;

                CREATE TABLE consumption_event (
                    tenant TEXT NOT NULL,
                    serial TEXT NOT NULL,
                    boot_counter INTEGER NOT NULL CHECK (boot_counter BETWEEN 0 AND 65535),
                    sequence INTEGER NOT NULL CHECK (sequence >= 0),
                    ticks INTEGER NOT NULL CHECK (ticks >= 0),
                    utc_nanoseconds INTEGER,
                    uncertainty_nanoseconds INTEGER CHECK (uncertainty_nanoseconds >= 0),
                    duration_milliseconds INTEGER NOT NULL CHECK (duration_milliseconds BETWEEN 0 AND 65535),
                    intensity INTEGER NOT NULL CHECK (intensity BETWEEN 0 AND 100),
                    received_at INTEGER NOT NULL,
                    version INTEGER NOT NULL CHECK (version >= 1),
                    gateway TEXT NOT NULL,
                    PRIMARY KEY (tenant, serial, boot_counter, sequence),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial),
                    CHECK ((utc_nanoseconds IS NULL) = (uncertainty_nanoseconds IS NULL))
                ) STRICT, WITHOUT ROWID;

                CREATE TABLE telemetry (
                    tenant TEXT NOT NULL,
                    serial TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('battery', 'sleep')),
                    received_at INTEGER NOT NULL,
                    document TEXT NOT NULL CHECK (json_valid(document)),
                    version INTEGER NOT NULL CHECK (version >= 1),
                    gateway TEXT NOT NULL,
                    PRIMARY KEY (tenant, serial, kind, received_at),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial)
                ) STRICT, WITHOUT ROWID;

                -- The idempotency record: written in the transaction that applied the command.
                CREATE TABLE command_log (
                    tenant TEXT NOT NULL,
                    id TEXT NOT NULL CHECK (length(id) = 36),
                    gateway TEXT NOT NULL,
                    fingerprint BLOB NOT NULL CHECK (length(fingerprint) = 32),
                    version INTEGER,
                    PRIMARY KEY (tenant, id)
                ) STRICT, WITHOUT ROWID;

                -- The change feed: seq is the cursor. AUTOINCREMENT never reuses a sequence, even after deletes.
                CREATE TABLE change_feed (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    tenant TEXT NOT NULL,
                    origin TEXT,
                    document TEXT NOT NULL CHECK (json_valid(document))
                ) STRICT;
                CREATE INDEX change_feed_tenant ON change_feed (tenant, seq);
                """)
        }
        return migrator
    }

    // MARK: - Tokens

    public func insertToken(_ token: TokenRecord) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO gateway_token (id, secret_hash, tenant, gateway, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [token.id, Data(token.secretHash), token.tenant, token.gateway, token.createdAt.timeIntervalSince1970, token.revokedAt?.timeIntervalSince1970])
        }
    }

    public func token(id: String) async throws -> TokenRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM gateway_token WHERE id = ?", arguments: [id]).map(Self.token)
        }
    }

    public func revokeToken(id: String, at date: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE gateway_token SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [date.timeIntervalSince1970, id])
            return db.changesCount > 0
        }
    }

    public func tokens() async throws -> [TokenRecord] {
        try await pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM gateway_token ORDER BY tenant, gateway, created_at").map(Self.token) }
    }

    private static func token(_ row: Row) -> TokenRecord {
        TokenRecord(
            id: row["id"], secretHash: [UInt8]((row["secret_hash"] as Data?) ?? Data()), tenant: row["tenant"], gateway: row["gateway"],
            createdAt: Date(timeIntervalSince1970: row["created_at"]), revokedAt: (row["revoked_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    // MARK: - Push

    public func push(_ commands: [PushCommand], by principal: GatewayPrincipal) async throws -> [CommandResult] {
        try await pool.write { db in
            var planner = BatchPlanner(state: try Self.load(BatchKeys(commands: commands), tenant: principal.tenant, db))
            let results = commands.map { planner.apply($0, from: principal.gateway) }
            try Self.write(planner.writes, tenant: principal.tenant, db)
            return results
        }
    }

    private static func load(_ keys: BatchKeys, tenant: String, _ db: Database) throws -> BatchState {
        var state = BatchState()
        let logged = try db.cachedStatement(sql: "SELECT gateway, fingerprint, version FROM command_log WHERE tenant = ? AND id = ?")
        for id in keys.commandIDs where state.logged[id] == nil {
            if let row = try Row.fetchOne(logged, arguments: [tenant, id.uuidString.lowercased()]) {
                state.logged[id] = CommandLogRow(id: id, gateway: row["gateway"], fingerprint: [UInt8]((row["fingerprint"] as Data?) ?? Data()), version: row["version"])
            }
        }
        let device = try db.cachedStatement(sql: "SELECT * FROM device WHERE tenant = ? AND serial = ?")
        let settings = try db.cachedStatement(sql: "SELECT * FROM device_settings WHERE tenant = ? AND serial = ?")
        for serial in keys.serials {
            if let row = try Row.fetchOne(device, arguments: [tenant, serial]) { state.devices[serial] = try Self.device(row) }
            if let row = try Row.fetchOne(settings, arguments: [tenant, serial]) { state.settings[serial] = try Self.settings(row) }
        }
        let event = try db.cachedStatement(sql: "SELECT * FROM consumption_event WHERE tenant = ? AND serial = ? AND boot_counter = ? AND sequence = ?")
        for key in keys.events {
            if let row = try Row.fetchOne(event, arguments: [tenant, key.serial, key.bootCounter, key.sequence]) { state.events[key] = Self.event(row) }
        }
        let telemetry = try db.cachedStatement(sql: "SELECT * FROM telemetry WHERE tenant = ? AND serial = ? AND kind = ? AND received_at = ?")
        for key in keys.telemetry {
            if let row = try Row.fetchOne(telemetry, arguments: [tenant, key.serial, key.kind.rawValue, key.receivedAt]) {
                state.telemetry[key] = try Self.telemetry(row)
            }
        }
        return state
    }

    private static func write(_ writes: BatchWrites, tenant: String, _ db: Database) throws {
        // Devices first: every other row references one.
        let device = try db.cachedStatement(sql: """
            INSERT INTO device (tenant, serial, hardware_revision, firmware_version, protocol_version, capabilities, pairing_state, version, deleted)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant, serial) DO UPDATE SET hardware_revision = excluded.hardware_revision, firmware_version = excluded.firmware_version,
                protocol_version = excluded.protocol_version, capabilities = excluded.capabilities, pairing_state = excluded.pairing_state,
                version = excluded.version, deleted = excluded.deleted
            """)
        for row in writes.devices.values {
            try device.execute(arguments: [
                tenant, row.serial, row.hardwareRevision, row.firmwareVersion, row.protocolVersion, row.capabilities, row.pairingState.rawValue,
                row.version, row.deleted,
            ])
        }
        let deleteSettings = try db.cachedStatement(sql: "DELETE FROM device_settings WHERE tenant = ? AND serial = ?")
        for serial in writes.deletedSettings { try deleteSettings.execute(arguments: [tenant, serial]) }
        let settings = try db.cachedStatement(sql: """
            INSERT INTO device_settings (tenant, serial, version, desired, changed_by, reported, reported_version, conflicts)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant, serial) DO UPDATE SET version = excluded.version, desired = excluded.desired, changed_by = excluded.changed_by,
                reported = excluded.reported, reported_version = excluded.reported_version, conflicts = excluded.conflicts
            """)
        for row in writes.settings.values {
            try settings.execute(arguments: [
                tenant, row.serial, row.version, try row.desired.map(StoredJSON.encode), row.changedBy?.rawValue,
                try row.reported.map(StoredJSON.encode), row.reportedVersion, try StoredJSON.encode(row.conflicts),
            ])
        }
        let deleteEvent = try db.cachedStatement(sql: "DELETE FROM consumption_event WHERE tenant = ? AND serial = ? AND boot_counter = ? AND sequence = ?")
        for key in writes.deletedEvents { try deleteEvent.execute(arguments: [tenant, key.serial, key.bootCounter, key.sequence]) }
        let event = try db.cachedStatement(sql: """
            INSERT INTO consumption_event (tenant, serial, boot_counter, sequence, ticks, utc_nanoseconds, uncertainty_nanoseconds,
                duration_milliseconds, intensity, received_at, version, gateway)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant, serial, boot_counter, sequence) DO UPDATE SET ticks = excluded.ticks, utc_nanoseconds = excluded.utc_nanoseconds,
                uncertainty_nanoseconds = excluded.uncertainty_nanoseconds, duration_milliseconds = excluded.duration_milliseconds,
                intensity = excluded.intensity, received_at = excluded.received_at, version = excluded.version, gateway = excluded.gateway
            """)
        for row in writes.events.values {
            let e = row.document
            try event.execute(arguments: [
                tenant, e.serial, e.bootCounter, e.sequence, e.ticks, e.utcNanoseconds, e.uncertaintyNanoseconds, e.durationMilliseconds,
                e.intensity, e.receivedAt, row.version, row.gateway,
            ])
        }
        let deleteTelemetry = try db.cachedStatement(sql: "DELETE FROM telemetry WHERE tenant = ? AND serial = ? AND kind = ? AND received_at = ?")
        for key in writes.deletedTelemetry { try deleteTelemetry.execute(arguments: [tenant, key.serial, key.kind.rawValue, key.receivedAt]) }
        let telemetry = try db.cachedStatement(sql: """
            INSERT INTO telemetry (tenant, serial, kind, received_at, document, version, gateway) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant, serial, kind, received_at) DO UPDATE SET document = excluded.document, version = excluded.version,
                gateway = excluded.gateway
            """)
        for row in writes.telemetry.values {
            try telemetry.execute(arguments: [
                tenant, row.document.serial, row.document.kind.rawValue, row.document.receivedAt, try StoredJSON.encode(row.document), row.version,
                row.gateway,
            ])
        }
        let log = try db.cachedStatement(sql: "INSERT INTO command_log (tenant, id, gateway, fingerprint, version) VALUES (?, ?, ?, ?, ?)")
        for row in writes.commandLog {
            try log.execute(arguments: [tenant, row.id.uuidString.lowercased(), row.gateway, Data(row.fingerprint), row.version])
        }
        let feed = try db.cachedStatement(sql: "INSERT INTO change_feed (tenant, origin, document) VALUES (?, ?, ?)")
        for entry in writes.feed { try feed.execute(arguments: [tenant, entry.origin, try StoredJSON.encode(entry.change)]) }
    }

    // MARK: - Feed and settings

    public func feed(tenant: String, after: Int64, limit: Int) async throws -> FeedSlice {
        try await pool.read { db in
            let head = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM change_feed WHERE tenant = ?", arguments: [tenant]) ?? 0
            let rows = try Row.fetchAll(
                db, sql: "SELECT seq, origin, document FROM change_feed WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?", arguments: [tenant, after, limit])
            let entries = try rows.map { row in
                FeedSlice.Entry(sequence: row["seq"], origin: row["origin"], change: try StoredJSON.decode(Change.self, row["document"], column: "change_feed.document"))
            }
            return FeedSlice(entries: entries, head: head)
        }
    }

    public func settings(tenant: String, serial: String) async throws -> DeviceSettingsResource? {
        try await pool.read { db in
            guard let device = try Row.fetchOne(db, sql: "SELECT deleted FROM device WHERE tenant = ? AND serial = ?", arguments: [tenant, serial]),
                !(device["deleted"] as Bool)
            else { return nil }
            let row = try Row.fetchOne(db, sql: "SELECT * FROM device_settings WHERE tenant = ? AND serial = ?", arguments: [tenant, serial])
            return try row.map(Self.settings)?.resource ?? SettingsRow(serial: serial).resource
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
        try await pool.write { db in
            var keys = BatchKeys()
            keys.serials = serials
            var planner = BatchPlanner(state: try Self.load(keys, tenant: tenant, db))
            let outcome = body(&planner)
            try Self.write(planner.writes, tenant: tenant, db)
            return outcome
        }
    }

    public func statistics(tenant: String) async throws -> TenantStatistics {
        try await pool.read { db in
            var statistics = TenantStatistics()
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db, sql: sql, arguments: [tenant]) ?? 0 }
            statistics.devices = try count("SELECT COUNT(*) FROM device WHERE tenant = ? AND deleted = 0")
            statistics.deletedDevices = try count("SELECT COUNT(*) FROM device WHERE tenant = ? AND deleted = 1")
            statistics.events = try count("SELECT COUNT(*) FROM consumption_event WHERE tenant = ?")
            statistics.telemetry = try count("SELECT COUNT(*) FROM telemetry WHERE tenant = ?")
            statistics.settings = try count("SELECT COUNT(*) FROM device_settings WHERE tenant = ?")
            statistics.appliedCommands = try count("SELECT COUNT(*) FROM command_log WHERE tenant = ?")
            statistics.feedEntries = try count("SELECT COUNT(*) FROM change_feed WHERE tenant = ?")
            return statistics
        }
    }

    // MARK: - Rows

    private static func device(_ row: Row) throws -> DeviceRow {
        guard let pairing = PairingState(rawValue: row["pairing_state"]) else { throw StorageCorruption(description: "device.pairing_state") }
        return DeviceRow(
            document: DevicePayload(
                serial: row["serial"], hardwareRevision: row["hardware_revision"], firmwareVersion: row["firmware_version"],
                protocolVersion: row["protocol_version"], capabilities: row["capabilities"], pairingState: pairing),
            version: row["version"], deleted: row["deleted"])
    }

    private static func settings(_ row: Row) throws -> SettingsRow {
        var settings = SettingsRow(serial: row["serial"])
        settings.version = row["version"]
        settings.desired = try StoredJSON.decodeIfPresent(SettingsDocument.self, row["desired"], column: "device_settings.desired")
        settings.changedBy = (row["changed_by"] as String?).flatMap(SettingsChangeAuthor.init(rawValue:))
        settings.reported = try StoredJSON.decodeIfPresent(SettingsDocument.self, row["reported"], column: "device_settings.reported")
        settings.reportedVersion = row["reported_version"]
        settings.conflicts = try StoredJSON.decode([SettingConflictPayload].self, row["conflicts"], column: "device_settings.conflicts")
        return settings
    }

    private static func event(_ row: Row) -> EventRow {
        EventRow(
            document: EventPayload(
                serial: row["serial"], bootCounter: row["boot_counter"], sequence: row["sequence"], ticks: row["ticks"],
                utcNanoseconds: row["utc_nanoseconds"], uncertaintyNanoseconds: row["uncertainty_nanoseconds"],
                durationMilliseconds: row["duration_milliseconds"], intensity: row["intensity"], receivedAt: row["received_at"]),
            version: row["version"], gateway: row["gateway"])
    }

    private static func telemetry(_ row: Row) throws -> TelemetryRow {
        TelemetryRow(
            document: try StoredJSON.decode(TelemetryPayload.self, row["document"], column: "telemetry.document"), version: row["version"],
            gateway: row["gateway"])
    }
}
