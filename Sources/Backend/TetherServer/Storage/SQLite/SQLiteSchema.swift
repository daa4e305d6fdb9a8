import Foundation
import GRDB

// The SQLite schema. A migration is never edited once shipped (its text is what existing databases were created
// with, and SchemaFingerprintTests pins it): append a new one.
extension SQLiteServerStore {
    public func migrate() async throws {
        try Self.migrator.migrate(pool)
    }

    static var migrator: DatabaseMigrator {
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
}
