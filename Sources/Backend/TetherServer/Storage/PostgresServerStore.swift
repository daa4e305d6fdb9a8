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
public final class PostgresServerStore: ServerStore {
    public let client: PostgresClient
    private let logger: Logger

    public init(configuration: PostgresClient.Configuration, logger: Logger) {
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
    }

    // MARK: - Schema

    /// Released with the first server. Never edited once shipped: append a new migration.
    private static let migrations: [(id: String, statements: [String])] = [
        (
            "v1",
            [
                """
                CREATE TABLE gateway_token (
                    id text PRIMARY KEY CHECK (length(id) = 16),
                    secret_hash bytea NOT NULL CHECK (length(secret_hash) = 32),
                    tenant text NOT NULL CHECK (length(tenant) BETWEEN 1 AND 128),
                    gateway text NOT NULL CHECK (length(gateway) BETWEEN 1 AND 128),
                    created_at timestamptz NOT NULL,
                    revoked_at timestamptz
                )
                """,
                """
                CREATE TABLE device (
                    tenant text NOT NULL,
                    serial text NOT NULL CHECK (length(serial) BETWEEN 1 AND 32),
                    hardware_revision integer CHECK (hardware_revision BETWEEN 0 AND 255),
                    firmware_version text,
                    protocol_version integer CHECK (protocol_version BETWEEN 1 AND 255),
                    capabilities integer NOT NULL CHECK (capabilities BETWEEN 0 AND 65535),
                    pairing_state text NOT NULL CHECK (pairing_state IN ('discovered', 'paired', 'unpaired', 'blocked')),
                    version bigint NOT NULL CHECK (version >= 1),
                    deleted boolean NOT NULL,
                    PRIMARY KEY (tenant, serial)
                )
                """,
                """
                CREATE TABLE device_settings (
                    tenant text NOT NULL,
                    serial text NOT NULL,
                    version bigint NOT NULL CHECK (version >= 0),
                    desired jsonb,
                    changed_by text CHECK (changed_by IN ('backend', 'technician')),
                    reported jsonb,
                    reported_version bigint,
                    conflicts jsonb NOT NULL,
                    PRIMARY KEY (tenant, serial),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial),
                    CHECK ((desired IS NULL) = (changed_by IS NULL))
                )
                """,
                """
                CREATE TABLE consumption_event (
                    tenant text NOT NULL,
                    serial text NOT NULL,
                    boot_counter integer NOT NULL CHECK (boot_counter BETWEEN 0 AND 65535),
                    sequence bigint NOT NULL CHECK (sequence >= 0),
                    ticks bigint NOT NULL CHECK (ticks >= 0),
                    utc_nanoseconds bigint,
                    uncertainty_nanoseconds bigint CHECK (uncertainty_nanoseconds >= 0),
                    duration_milliseconds integer NOT NULL CHECK (duration_milliseconds BETWEEN 0 AND 65535),
                    intensity integer NOT NULL CHECK (intensity BETWEEN 0 AND 100),
                    received_at bigint NOT NULL,
                    version bigint NOT NULL CHECK (version >= 1),
                    gateway text NOT NULL,
                    PRIMARY KEY (tenant, serial, boot_counter, sequence),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial),
                    CHECK ((utc_nanoseconds IS NULL) = (uncertainty_nanoseconds IS NULL))
                )
                """,
                """
                CREATE TABLE telemetry (
                    tenant text NOT NULL,
                    serial text NOT NULL,
                    kind text NOT NULL CHECK (kind IN ('battery', 'sleep')),
                    received_at bigint NOT NULL,
                    document jsonb NOT NULL,
                    version bigint NOT NULL CHECK (version >= 1),
                    gateway text NOT NULL,
                    PRIMARY KEY (tenant, serial, kind, received_at),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial)
                )
                """,
                """
                CREATE TABLE command_log (
                    tenant text NOT NULL,
                    id uuid NOT NULL,
                    gateway text NOT NULL,
                    fingerprint bytea NOT NULL CHECK (length(fingerprint) = 32),
                    version bigint,
                    PRIMARY KEY (tenant, id)
                )
                """,
                """
                CREATE TABLE change_feed (
                    seq bigserial PRIMARY KEY,
                    tenant text NOT NULL,
                    origin text,
                    document jsonb NOT NULL
                )
                """,
                "CREATE INDEX change_feed_tenant ON change_feed (tenant, seq)",
            ]
        )
    ]

    public func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            // One migrator at a time, however many servers start together.
            try await connection.query("SELECT pg_advisory_xact_lock(7402013)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_migration (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())", logger: logger)
            var applied: Set<String> = []
            for try await id in try await connection.query("SELECT id FROM schema_migration", logger: logger).decode(String.self) {
                applied.insert(id)
            }
            for migration in Self.migrations where !applied.contains(migration.id) {
                for statement in migration.statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                try await connection.query("INSERT INTO schema_migration (id) VALUES (\(migration.id))", logger: logger)
            }
        }
    }

    // MARK: - Tokens

    public func insertToken(_ token: TokenRecord) async throws {
        try await client.query(
            """
            INSERT INTO gateway_token (id, secret_hash, tenant, gateway, created_at, revoked_at)
            VALUES (\(token.id), \(ByteBuffer(bytes: token.secretHash)), \(token.tenant), \(token.gateway), \(token.createdAt), \(token.revokedAt))
            """, logger: logger)
    }

    public func token(id: String) async throws -> TokenRecord? {
        let rows = try await client.query("SELECT id, secret_hash, tenant, gateway, created_at, revoked_at FROM gateway_token WHERE id = \(id)", logger: logger)
        for try await row in rows { return try Self.token(row.makeRandomAccess()) }
        return nil
    }

    public func revokeToken(id: String, at date: Date) async throws -> Bool {
        let rows = try await client.query("UPDATE gateway_token SET revoked_at = \(date) WHERE id = \(id) AND revoked_at IS NULL RETURNING id", logger: logger)
        var revoked = false
        for try await _ in rows { revoked = true }
        return revoked
    }

    public func tokens() async throws -> [TokenRecord] {
        var tokens: [TokenRecord] = []
        let rows = try await client.query(
            "SELECT id, secret_hash, tenant, gateway, created_at, revoked_at FROM gateway_token ORDER BY tenant, gateway, created_at", logger: logger)
        for try await row in rows { tokens.append(try Self.token(row.makeRandomAccess())) }
        return tokens
    }

    private static func token(_ row: PostgresRandomAccessRow) throws -> TokenRecord {
        TokenRecord(
            id: try row["id"].decode(String.self), secretHash: Array(buffer: try row["secret_hash"].decode(ByteBuffer.self)),
            tenant: try row["tenant"].decode(String.self), gateway: try row["gateway"].decode(String.self),
            createdAt: try row["created_at"].decode(Date.self), revokedAt: try row["revoked_at"].decode(Date?.self))
    }

    // MARK: - Push

    public func push(_ commands: [PushCommand], by principal: GatewayPrincipal) async throws -> [CommandResult] {
        let logger = logger
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.lock(tenant: principal.tenant, connection, logger)
            var planner = BatchPlanner(state: try await Self.load(BatchKeys(commands: commands), tenant: principal.tenant, connection, logger))
            let results = commands.map { planner.apply($0, from: principal.gateway) }
            try await Self.write(planner.writes, tenant: principal.tenant, connection, logger)
            return results
        }
    }

    private static func lock(tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(tenant), 0))", logger: logger)
    }

    private static func load(_ keys: BatchKeys, tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws -> BatchState {
        var state = BatchState()
        if !keys.commandIDs.isEmpty {
            let rows = try await connection.query(
                "SELECT id, gateway, fingerprint, version FROM command_log WHERE tenant = \(tenant) AND id = ANY(\(keys.commandIDs))", logger: logger)
            for try await row in rows {
                let row = row.makeRandomAccess()
                let id = try row["id"].decode(UUID.self)
                state.logged[id] = CommandLogRow(
                    id: id, gateway: try row["gateway"].decode(String.self), fingerprint: Array(buffer: try row["fingerprint"].decode(ByteBuffer.self)),
                    version: try row["version"].decode(Int64?.self))
            }
        }
        if !keys.serials.isEmpty {
            let serials = Array(keys.serials)
            let devices = try await connection.query(
                """
                SELECT serial, hardware_revision, firmware_version, protocol_version, capabilities, pairing_state, version, deleted
                FROM device WHERE tenant = \(tenant) AND serial = ANY(\(serials))
                """, logger: logger)
            for try await row in devices {
                let device = try Self.device(row.makeRandomAccess())
                state.devices[device.serial] = device
            }
            let settings = try await connection.query(
                """
                SELECT serial, version, desired::text AS desired, changed_by, reported::text AS reported, reported_version, conflicts::text AS conflicts
                FROM device_settings WHERE tenant = \(tenant) AND serial = ANY(\(serials))
                """, logger: logger)
            for try await row in settings {
                let row = try Self.settings(row.makeRandomAccess())
                state.settings[row.serial] = row
            }
        }
        if !keys.events.isEmpty {
            let events = Array(keys.events)
            let rows = try await connection.query(
                """
                SELECT e.serial, e.boot_counter, e.sequence, e.ticks, e.utc_nanoseconds, e.uncertainty_nanoseconds, e.duration_milliseconds,
                    e.intensity, e.received_at, e.version, e.gateway
                FROM consumption_event e
                JOIN unnest(\(events.map(\.serial)), \(events.map { Int64($0.bootCounter) }), \(events.map(\.sequence))) AS k(serial, boot_counter, sequence)
                    ON e.serial = k.serial AND e.boot_counter = k.boot_counter AND e.sequence = k.sequence
                WHERE e.tenant = \(tenant)
                """, logger: logger)
            for try await row in rows {
                let event = try Self.event(row.makeRandomAccess())
                state.events[event.key] = event
            }
        }
        if !keys.telemetry.isEmpty {
            let telemetry = Array(keys.telemetry)
            let rows = try await connection.query(
                """
                SELECT t.document::text AS document, t.version, t.gateway
                FROM telemetry t
                JOIN unnest(\(telemetry.map(\.serial)), \(telemetry.map(\.kind.rawValue)), \(telemetry.map(\.receivedAt))) AS k(serial, kind, received_at)
                    ON t.serial = k.serial AND t.kind = k.kind AND t.received_at = k.received_at
                WHERE t.tenant = \(tenant)
                """, logger: logger)
            for try await row in rows {
                let row = row.makeRandomAccess()
                let document = try StoredJSON.decode(TelemetryPayload.self, try row["document"].decode(String.self), column: "telemetry.document")
                let record = TelemetryRow(document: document, version: try row["version"].decode(Int64.self), gateway: try row["gateway"].decode(String.self))
                state.telemetry[record.key] = record
            }
        }
        return state
    }

    private static func write(_ writes: BatchWrites, tenant: String, _ connection: PostgresConnection, _ logger: Logger) async throws {
        if !writes.devices.isEmpty {
            let rows = try StoredJSON.encode(writes.devices.values.map(DeviceRecordJSON.init))
            try await connection.query(
                """
                INSERT INTO device (tenant, serial, hardware_revision, firmware_version, protocol_version, capabilities, pairing_state, version, deleted)
                SELECT \(tenant), r.serial, r.hardware_revision, r.firmware_version, r.protocol_version, r.capabilities, r.pairing_state, r.version, r.deleted
                FROM jsonb_to_recordset(\(rows)::jsonb) AS r(serial text, hardware_revision integer, firmware_version text, protocol_version integer,
                    capabilities integer, pairing_state text, version bigint, deleted boolean)
                ON CONFLICT (tenant, serial) DO UPDATE SET hardware_revision = excluded.hardware_revision, firmware_version = excluded.firmware_version,
                    protocol_version = excluded.protocol_version, capabilities = excluded.capabilities, pairing_state = excluded.pairing_state,
                    version = excluded.version, deleted = excluded.deleted
                """, logger: logger)
        }
        if !writes.deletedSettings.isEmpty {
            try await connection.query(
                "DELETE FROM device_settings WHERE tenant = \(tenant) AND serial = ANY(\(Array(writes.deletedSettings)))", logger: logger)
        }
        if !writes.settings.isEmpty {
            let rows = try StoredJSON.encode(try writes.settings.values.map(SettingsRecordJSON.init))
            try await connection.query(
                """
                INSERT INTO device_settings (tenant, serial, version, desired, changed_by, reported, reported_version, conflicts)
                SELECT \(tenant), r.serial, r.version, r.desired, r.changed_by, r.reported, r.reported_version, r.conflicts
                FROM jsonb_to_recordset(\(rows)::jsonb) AS r(serial text, version bigint, desired jsonb, changed_by text, reported jsonb,
                    reported_version bigint, conflicts jsonb)
                ON CONFLICT (tenant, serial) DO UPDATE SET version = excluded.version, desired = excluded.desired, changed_by = excluded.changed_by,
                    reported = excluded.reported, reported_version = excluded.reported_version, conflicts = excluded.conflicts
                """, logger: logger)
        }
        if !writes.deletedEvents.isEmpty {
            let keys = Array(writes.deletedEvents)
            try await connection.query(
                """
                DELETE FROM consumption_event e USING unnest(\(keys.map(\.serial)), \(keys.map { Int64($0.bootCounter) }), \(keys.map(\.sequence)))
                    AS k(serial, boot_counter, sequence)
                WHERE e.tenant = \(tenant) AND e.serial = k.serial AND e.boot_counter = k.boot_counter AND e.sequence = k.sequence
                """, logger: logger)
        }
        if !writes.events.isEmpty {
            let rows = try StoredJSON.encode(writes.events.values.map(EventRecordJSON.init))
            try await connection.query(
                """
                INSERT INTO consumption_event (tenant, serial, boot_counter, sequence, ticks, utc_nanoseconds, uncertainty_nanoseconds,
                    duration_milliseconds, intensity, received_at, version, gateway)
                SELECT \(tenant), r.serial, r.boot_counter, r.sequence, r.ticks, r.utc_nanoseconds, r.uncertainty_nanoseconds,
                    r.duration_milliseconds, r.intensity, r.received_at, r.version, r.gateway
                FROM jsonb_to_recordset(\(rows)::jsonb) AS r(serial text, boot_counter integer, sequence bigint, ticks bigint, utc_nanoseconds bigint,
                    uncertainty_nanoseconds bigint, duration_milliseconds integer, intensity integer, received_at bigint, version bigint, gateway text)
                ON CONFLICT (tenant, serial, boot_counter, sequence) DO UPDATE SET ticks = excluded.ticks, utc_nanoseconds = excluded.utc_nanoseconds,
                    uncertainty_nanoseconds = excluded.uncertainty_nanoseconds, duration_milliseconds = excluded.duration_milliseconds,
                    intensity = excluded.intensity, received_at = excluded.received_at, version = excluded.version, gateway = excluded.gateway
                """, logger: logger)
        }
        if !writes.deletedTelemetry.isEmpty {
            let keys = Array(writes.deletedTelemetry)
            try await connection.query(
                """
                DELETE FROM telemetry t USING unnest(\(keys.map(\.serial)), \(keys.map(\.kind.rawValue)), \(keys.map(\.receivedAt))) AS k(serial, kind, received_at)
                WHERE t.tenant = \(tenant) AND t.serial = k.serial AND t.kind = k.kind AND t.received_at = k.received_at
                """, logger: logger)
        }
        if !writes.telemetry.isEmpty {
            let rows = try StoredJSON.encode(writes.telemetry.values.map(TelemetryRecordJSON.init))
            try await connection.query(
                """
                INSERT INTO telemetry (tenant, serial, kind, received_at, document, version, gateway)
                SELECT \(tenant), r.serial, r.kind, r.received_at, r.document, r.version, r.gateway
                FROM jsonb_to_recordset(\(rows)::jsonb) AS r(serial text, kind text, received_at bigint, document jsonb, version bigint, gateway text)
                ON CONFLICT (tenant, serial, kind, received_at) DO UPDATE SET document = excluded.document, version = excluded.version,
                    gateway = excluded.gateway
                """, logger: logger)
        }
        if !writes.commandLog.isEmpty {
            let rows = try StoredJSON.encode(writes.commandLog.map(CommandLogJSON.init))
            try await connection.query(
                """
                INSERT INTO command_log (tenant, id, gateway, fingerprint, version)
                SELECT \(tenant), r.id, r.gateway, decode(r.fingerprint, 'hex'), r.version
                FROM jsonb_to_recordset(\(rows)::jsonb) AS r(id uuid, gateway text, fingerprint text, version bigint)
                """, logger: logger)
        }
        // One statement per entry: the sequence numbers are drawn in feed order.
        for entry in writes.feed {
            try await connection.query(
                "INSERT INTO change_feed (tenant, origin, document) VALUES (\(tenant), \(entry.origin), \(try StoredJSON.encode(entry.change))::jsonb)",
                logger: logger)
        }
    }

    // MARK: - Feed and settings

    public func feed(tenant: String, after: Int64, limit: Int) async throws -> FeedSlice {
        try await client.withConnection { connection in
            var head: Int64 = 0
            for try await value in try await connection.query("SELECT COALESCE(MAX(seq), 0) FROM change_feed WHERE tenant = \(tenant)", logger: logger)
                .decode(Int64.self)
            {
                head = value
            }
            var entries: [FeedSlice.Entry] = []
            let rows = try await connection.query(
                "SELECT seq, origin, document::text AS document FROM change_feed WHERE tenant = \(tenant) AND seq > \(after) ORDER BY seq LIMIT \(Int64(limit))",
                logger: logger)
            for try await row in rows {
                let row = row.makeRandomAccess()
                entries.append(
                    FeedSlice.Entry(
                        sequence: try row["seq"].decode(Int64.self), origin: try row["origin"].decode(String?.self),
                        change: try StoredJSON.decode(Change.self, try row["document"].decode(String.self), column: "change_feed.document")))
            }
            return FeedSlice(entries: entries, head: head)
        }
    }

    public func settings(tenant: String, serial: String) async throws -> DeviceSettingsResource? {
        try await client.withConnection { connection in
            var exists = false
            for try await deleted in try await connection.query("SELECT deleted FROM device WHERE tenant = \(tenant) AND serial = \(serial)", logger: logger)
                .decode(Bool.self)
            {
                exists = !deleted
            }
            guard exists else { return nil }
            let rows = try await connection.query(
                """
                SELECT serial, version, desired::text AS desired, changed_by, reported::text AS reported, reported_version, conflicts::text AS conflicts
                FROM device_settings WHERE tenant = \(tenant) AND serial = \(serial)
                """, logger: logger)
            for try await row in rows { return try Self.settings(row.makeRandomAccess()).resource }
            return SettingsRow(serial: serial).resource
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

    private func plan<T: Sendable>(tenant: String, serials: Set<String>, _ body: (inout BatchPlanner) -> T) async throws -> T {
        let logger = logger
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.lock(tenant: tenant, connection, logger)
            var keys = BatchKeys()
            keys.serials = serials
            var planner = BatchPlanner(state: try await Self.load(keys, tenant: tenant, connection, logger))
            let outcome = body(&planner)
            try await Self.write(planner.writes, tenant: tenant, connection, logger)
            return outcome
        }
    }

    public func statistics(tenant: String) async throws -> TenantStatistics {
        let rows = try await client.query(
            """
            SELECT
                (SELECT COUNT(*) FROM device WHERE tenant = \(tenant) AND NOT deleted),
                (SELECT COUNT(*) FROM device WHERE tenant = \(tenant) AND deleted),
                (SELECT COUNT(*) FROM consumption_event WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM telemetry WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM device_settings WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM command_log WHERE tenant = \(tenant)),
                (SELECT COUNT(*) FROM change_feed WHERE tenant = \(tenant))
            """, logger: logger)
        var statistics = TenantStatistics()
        for try await (devices, deleted, events, telemetry, settings, commands, feed) in rows.decode((Int64, Int64, Int64, Int64, Int64, Int64, Int64).self) {
            statistics.devices = Int(devices)
            statistics.deletedDevices = Int(deleted)
            statistics.events = Int(events)
            statistics.telemetry = Int(telemetry)
            statistics.settings = Int(settings)
            statistics.appliedCommands = Int(commands)
            statistics.feedEntries = Int(feed)
        }
        return statistics
    }

    // MARK: - Rows

    private static func device(_ row: PostgresRandomAccessRow) throws -> DeviceRow {
        let pairingText = try row["pairing_state"].decode(String.self)
        guard let pairing = PairingState(rawValue: pairingText) else { throw StorageCorruption(description: "device.pairing_state \(pairingText)") }
        return DeviceRow(
            document: DevicePayload(
                serial: try row["serial"].decode(String.self), hardwareRevision: try row["hardware_revision"].decode(Int?.self),
                firmwareVersion: try row["firmware_version"].decode(String?.self), protocolVersion: try row["protocol_version"].decode(Int?.self),
                capabilities: try row["capabilities"].decode(Int.self), pairingState: pairing),
            version: try row["version"].decode(Int64.self), deleted: try row["deleted"].decode(Bool.self))
    }

    private static func settings(_ row: PostgresRandomAccessRow) throws -> SettingsRow {
        var settings = SettingsRow(serial: try row["serial"].decode(String.self))
        settings.version = try row["version"].decode(Int64.self)
        settings.desired = try StoredJSON.decodeIfPresent(SettingsDocument.self, try row["desired"].decode(String?.self), column: "device_settings.desired")
        settings.changedBy = try row["changed_by"].decode(String?.self).flatMap(SettingsChangeAuthor.init(rawValue:))
        settings.reported = try StoredJSON.decodeIfPresent(SettingsDocument.self, try row["reported"].decode(String?.self), column: "device_settings.reported")
        settings.reportedVersion = try row["reported_version"].decode(Int64?.self)
        settings.conflicts = try StoredJSON.decode([SettingConflictPayload].self, try row["conflicts"].decode(String.self), column: "device_settings.conflicts")
        return settings
    }

    private static func event(_ row: PostgresRandomAccessRow) throws -> EventRow {
        EventRow(
            document: EventPayload(
                serial: try row["serial"].decode(String.self), bootCounter: try row["boot_counter"].decode(Int.self),
                sequence: try row["sequence"].decode(Int64.self), ticks: try row["ticks"].decode(Int64.self),
                utcNanoseconds: try row["utc_nanoseconds"].decode(Int64?.self), uncertaintyNanoseconds: try row["uncertainty_nanoseconds"].decode(Int64?.self),
                durationMilliseconds: try row["duration_milliseconds"].decode(Int.self), intensity: try row["intensity"].decode(Int.self),
                receivedAt: try row["received_at"].decode(Int64.self)),
            version: try row["version"].decode(Int64.self), gateway: try row["gateway"].decode(String.self))
    }
}

// Rows as `jsonb_to_recordset` reads them: keys are the column names.

private struct DeviceRecordJSON: Encodable {
    var serial: String
    var hardware_revision: Int?
    var firmware_version: String?
    var protocol_version: Int?
    var capabilities: Int
    var pairing_state: String
    var version: Int64
    var deleted: Bool

    init(_ row: DeviceRow) {
        serial = row.serial
        hardware_revision = row.hardwareRevision
        firmware_version = row.firmwareVersion
        protocol_version = row.protocolVersion
        capabilities = row.capabilities
        pairing_state = row.pairingState.rawValue
        version = row.version
        deleted = row.deleted
    }
}

private struct SettingsRecordJSON: Encodable {
    var serial: String
    var version: Int64
    var desired: SettingsDocument?
    var changed_by: String?
    var reported: SettingsDocument?
    var reported_version: Int64?
    var conflicts: [SettingConflictPayload]

    init(_ row: SettingsRow) throws {
        serial = row.serial
        version = row.version
        desired = row.desired
        changed_by = row.changedBy?.rawValue
        reported = row.reported
        reported_version = row.reportedVersion
        conflicts = row.conflicts
    }
}

private struct EventRecordJSON: Encodable {
    var serial: String
    var boot_counter: Int
    var sequence: Int64
    var ticks: Int64
    var utc_nanoseconds: Int64?
    var uncertainty_nanoseconds: Int64?
    var duration_milliseconds: Int
    var intensity: Int
    var received_at: Int64
    var version: Int64
    var gateway: String

    init(_ row: EventRow) {
        let e = row.document
        serial = e.serial
        boot_counter = e.bootCounter
        sequence = e.sequence
        ticks = e.ticks
        utc_nanoseconds = e.utcNanoseconds
        uncertainty_nanoseconds = e.uncertaintyNanoseconds
        duration_milliseconds = e.durationMilliseconds
        intensity = e.intensity
        received_at = e.receivedAt
        version = row.version
        gateway = row.gateway
    }
}

private struct TelemetryRecordJSON: Encodable {
    var serial: String
    var kind: String
    var received_at: Int64
    var document: TelemetryPayload
    var version: Int64
    var gateway: String

    init(_ row: TelemetryRow) {
        serial = row.document.serial
        kind = row.document.kind.rawValue
        received_at = row.document.receivedAt
        document = row.document
        version = row.version
        gateway = row.gateway
    }
}

private struct CommandLogJSON: Encodable {
    var id: String
    var gateway: String
    var fingerprint: String
    var version: Int64?

    init(_ row: CommandLogRow) {
        id = row.id.uuidString.lowercased()
        gateway = row.gateway
        fingerprint = SyncContract.Hex.encode(row.fingerprint)
        version = row.version
    }
}
