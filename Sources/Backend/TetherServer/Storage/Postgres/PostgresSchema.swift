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
}

extension PostgresServerStore {
    /// Every statement the migrations run, in order: what the schema fingerprint test pins.
    public static var migrationStatements: [String] { migrations.flatMap { ["-- \($0.id)"] + $0.statements } }
}
