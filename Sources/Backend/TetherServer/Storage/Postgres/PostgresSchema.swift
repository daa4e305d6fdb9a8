import Foundation
import Logging
import PostgresNIO

// The PostgreSQL schema. A migration is never edited once shipped (its text is what existing databases were
// created with, and SchemaFingerprintTests pins it): append a new one.
extension PostgresServerStore {
    /// Released with the first server. Never edited once shipped: append a new migration.
    static let migrations: [(id: String, statements: [String])] = [
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
        ),
        // Health upload (issue 15): the same tables as SQLite's v2. Exact values only: integers and numeral text.
        (
            "v2",
            [
                """
                CREATE TABLE health_sample (
                    tenant text NOT NULL,
                    uid text NOT NULL CHECK (length(uid) = 36 AND uid = lower(uid)),
                    dedup_key text NOT NULL CHECK (length(dedup_key) BETWEEN 1 AND 512),
                    device_uid text NOT NULL CHECK (length(device_uid) BETWEEN 1 AND 128),
                    device_address text,
                    device_manufacturer text,
                    device_model text,
                    device_serial text,
                    characteristic text NOT NULL CHECK (length(characteristic) = 36 AND characteristic = lower(characteristic)),
                    metric_code bigint NOT NULL CHECK (metric_code BETWEEN 1 AND 4294967295),
                    occurrence integer NOT NULL CHECK (occurrence BETWEEN 0 AND 255),
                    value_status text NOT NULL
                        CHECK (value_status IN ('number', 'nan', 'nres', 'positive-infinity', 'negative-infinity', 'reserved')),
                    reported_mantissa bigint,
                    reported_exponent integer CHECK (reported_exponent BETWEEN -128 AND 127),
                    reported_unit text NOT NULL CHECK (length(reported_unit) BETWEEN 1 AND 64),
                    canonical_value text CHECK (canonical_value IS NULL OR (canonical_value ~ '^-?[0-9]+(\\.[0-9]+)?$' AND length(canonical_value) <= 80)),
                    canonical_unit text NOT NULL CHECK (length(canonical_unit) BETWEEN 1 AND 64),
                    effective_at bigint NOT NULL,
                    device_time text CHECK (device_time IS NULL OR length(device_time) BETWEEN 1 AND 64),
                    time_basis text NOT NULL
                        CHECK (time_basis IN ('clock-set-by-gateway', 'local-time-with-offset', 'coincident-clock-reading',
                                              'cgm-session-start', 'device-time-unverified', 'receipt')),
                    skew_ms bigint,
                    user_index integer CHECK (user_index BETWEEN 0 AND 255),
                    record_sequence bigint CHECK (record_sequence >= 0),
                    epoch bigint NOT NULL CHECK (epoch >= 0),
                    lane text NOT NULL CHECK (lane IN ('hot', 'cold', 'change')),
                    received_at bigint NOT NULL,
                    raw_bytes bytea CHECK (raw_bytes IS NULL OR length(raw_bytes) BETWEEN 1 AND 1024),
                    parser_version integer CHECK (parser_version >= 1),
                    replaces text CHECK (replaces IS NULL OR length(replaces) = 36),
                    deleted_at bigint,
                    gateway text NOT NULL,
                    stored_at bigint NOT NULL,
                    PRIMARY KEY (tenant, uid),
                    UNIQUE (tenant, dedup_key),
                    CHECK ((value_status = 'number') = (reported_mantissa IS NOT NULL)),
                    CHECK ((reported_mantissa IS NULL) = (reported_exponent IS NULL)),
                    CHECK ((value_status = 'number') = (canonical_value IS NOT NULL)),
                    CHECK (time_basis = 'receipt' OR device_time IS NOT NULL),
                    CHECK (lane = 'change' OR raw_bytes IS NOT NULL),
                    CHECK (raw_bytes IS NULL OR parser_version IS NOT NULL)
                )
                """,
                "CREATE INDEX health_sample_time ON health_sample (tenant, effective_at, uid)",
                """
                CREATE TABLE health_deletion (
                    tenant text NOT NULL,
                    uid text NOT NULL CHECK (length(uid) = 36 AND uid = lower(uid)),
                    sample_uid text NOT NULL CHECK (length(sample_uid) = 36 AND sample_uid = lower(sample_uid)),
                    reason text NOT NULL CHECK (reason IN ('technician', 'backend', 'vanished-from-device', 'correction')),
                    requested_by text NOT NULL CHECK (requested_by IN ('technician', 'backend', 'gateway')),
                    replacement_sample_uid text CHECK (replacement_sample_uid IS NULL OR length(replacement_sample_uid) = 36),
                    note text CHECK (note IS NULL OR length(note) BETWEEN 1 AND 1000),
                    requested_at bigint NOT NULL,
                    gateway text NOT NULL,
                    stored_at bigint NOT NULL,
                    PRIMARY KEY (tenant, uid),
                    UNIQUE (tenant, sample_uid),
                    CHECK ((reason = 'correction') = (replacement_sample_uid IS NOT NULL)),
                    CHECK (replacement_sample_uid IS DISTINCT FROM sample_uid),
                    CHECK (reason <> 'technician' OR requested_by = 'technician'),
                    CHECK (reason <> 'backend' OR requested_by = 'backend'),
                    CHECK (reason <> 'vanished-from-device' OR requested_by = 'gateway'),
                    CHECK (reason <> 'correction' OR requested_by IN ('technician', 'backend'))
                )
                """,
            ]
        ),
        // Health projections (issue 15): the same index as SQLite's v3.
        ("v3", ["CREATE INDEX health_sample_projection ON health_sample (tenant, device_uid, metric_code, effective_at)"]),
        // The FHIR export's pages (healthExportPage): undeleted samples by effective time, then uid byte by byte.
        ("v4", [#"CREATE INDEX health_sample_export ON health_sample (tenant, effective_at, uid COLLATE "C") WHERE deleted_at IS NULL"#]),
        // Firmware updates' endings (issue 16): the same table as SQLite's v4.
        (
            "v5",
            [
                """
                CREATE TABLE firmware_update (
                    tenant text NOT NULL,
                    uid text NOT NULL CHECK (length(uid) = 36),
                    serial text CHECK (serial IS NULL OR length(serial) BETWEEN 1 AND 32),
                    address text NOT NULL CHECK (length(address) = 17),
                    outcome text NOT NULL CHECK (outcome IN ('confirmed', 'running-in-test', 'already-running', 'reverted', 'failed', 'cancelled')),
                    image_version text NOT NULL CHECK (length(image_version) BETWEEN 1 AND 64),
                    finished_at bigint NOT NULL,
                    document jsonb NOT NULL,
                    gateway text NOT NULL,
                    PRIMARY KEY (tenant, uid),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial)
                )
                """,
                "CREATE INDEX firmware_update_device ON firmware_update (tenant, address, finished_at)",
            ]
        ),
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
}

extension PostgresServerStore {
    /// Every statement the migrations run, in order: what the schema fingerprint test pins.
    public static var migrationStatements: [String] { migrations.flatMap { ["-- \($0.id)"] + $0.statements } }
}
