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
        // Health upload (issue 15). The uid is the idempotency key, the dedup key names the reading: both unique
        // per tenant. Values are exact: the reported mantissa and exponent as integers, the canonical value as a
        // decimal numeral in text, never REAL. A tombstone may come before its sample, so it names the sample by
        // uid and has no foreign key.
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                CREATE TABLE health_sample (
                    tenant TEXT NOT NULL,
                    uid TEXT NOT NULL CHECK (length(uid) = 36 AND uid = lower(uid)),
                    dedup_key TEXT NOT NULL CHECK (length(dedup_key) BETWEEN 1 AND 512),
                    device_uid TEXT NOT NULL CHECK (length(device_uid) BETWEEN 1 AND 128),
                    device_address TEXT,
                    device_manufacturer TEXT,
                    device_model TEXT,
                    device_serial TEXT,
                    characteristic TEXT NOT NULL CHECK (length(characteristic) = 36 AND characteristic = lower(characteristic)),
                    metric_code INTEGER NOT NULL CHECK (metric_code BETWEEN 1 AND 4294967295),
                    occurrence INTEGER NOT NULL CHECK (occurrence BETWEEN 0 AND 255),
                    value_status TEXT NOT NULL
                        CHECK (value_status IN ('number', 'nan', 'nres', 'positive-infinity', 'negative-infinity', 'reserved')),
                    reported_mantissa INTEGER,
                    reported_exponent INTEGER CHECK (reported_exponent BETWEEN -128 AND 127),
                    reported_unit TEXT NOT NULL CHECK (length(reported_unit) BETWEEN 1 AND 64),
                    canonical_value TEXT CHECK (canonical_value IS NULL OR (
                        length(canonical_value) BETWEEN 1 AND 80
                        AND (canonical_value GLOB '[0-9]*' OR canonical_value GLOB '-[0-9]*')
                        AND canonical_value GLOB '*[0-9]'
                        AND NOT canonical_value GLOB '?*[^0-9.]*'
                        AND NOT canonical_value GLOB '*.*.*')),
                    canonical_unit TEXT NOT NULL CHECK (length(canonical_unit) BETWEEN 1 AND 64),
                    effective_at INTEGER NOT NULL,
                    device_time TEXT CHECK (device_time IS NULL OR length(device_time) BETWEEN 1 AND 64),
                    time_basis TEXT NOT NULL
                        CHECK (time_basis IN ('clock-set-by-gateway', 'local-time-with-offset', 'coincident-clock-reading',
                                              'cgm-session-start', 'device-time-unverified', 'receipt')),
                    skew_ms INTEGER,
                    user_index INTEGER CHECK (user_index BETWEEN 0 AND 255),
                    record_sequence INTEGER CHECK (record_sequence >= 0),
                    epoch INTEGER NOT NULL CHECK (epoch >= 0),
                    lane TEXT NOT NULL CHECK (lane IN ('hot', 'cold', 'change')),
                    received_at INTEGER NOT NULL,
                    raw_bytes BLOB CHECK (raw_bytes IS NULL OR length(raw_bytes) BETWEEN 1 AND 1024),
                    parser_version INTEGER CHECK (parser_version >= 1),
                    replaces TEXT CHECK (replaces IS NULL OR length(replaces) = 36),
                    deleted_at INTEGER,
                    gateway TEXT NOT NULL,
                    stored_at INTEGER NOT NULL,
                    PRIMARY KEY (tenant, uid),
                    UNIQUE (tenant, dedup_key),
                    CHECK ((value_status = 'number') = (reported_mantissa IS NOT NULL)),
                    CHECK ((reported_mantissa IS NULL) = (reported_exponent IS NULL)),
                    CHECK ((value_status = 'number') = (canonical_value IS NOT NULL)),
                    CHECK (time_basis = 'receipt' OR device_time IS NOT NULL),
                    CHECK (lane = 'change' OR raw_bytes IS NOT NULL),
                    CHECK (raw_bytes IS NULL OR parser_version IS NOT NULL)
                ) STRICT, WITHOUT ROWID;
                -- `tether-server health samples`: a tenant's samples in time order.
                CREATE INDEX health_sample_time ON health_sample (tenant, effective_at, uid);

                CREATE TABLE health_deletion (
                    tenant TEXT NOT NULL,
                    uid TEXT NOT NULL CHECK (length(uid) = 36 AND uid = lower(uid)),
                    sample_uid TEXT NOT NULL CHECK (length(sample_uid) = 36 AND sample_uid = lower(sample_uid)),
                    reason TEXT NOT NULL CHECK (reason IN ('technician', 'backend', 'vanished-from-device', 'correction')),
                    requested_by TEXT NOT NULL CHECK (requested_by IN ('technician', 'backend', 'gateway')),
                    replacement_sample_uid TEXT CHECK (replacement_sample_uid IS NULL OR length(replacement_sample_uid) = 36),
                    note TEXT CHECK (note IS NULL OR length(note) BETWEEN 1 AND 1000),
                    requested_at INTEGER NOT NULL,
                    gateway TEXT NOT NULL,
                    stored_at INTEGER NOT NULL,
                    PRIMARY KEY (tenant, uid),
                    UNIQUE (tenant, sample_uid),
                    CHECK ((reason = 'correction') = (replacement_sample_uid IS NOT NULL)),
                    CHECK (replacement_sample_uid IS NOT sample_uid),
                    CHECK (reason <> 'technician' OR requested_by = 'technician'),
                    CHECK (reason <> 'backend' OR requested_by = 'backend'),
                    CHECK (reason <> 'vanished-from-device' OR requested_by = 'gateway'),
                    CHECK (reason <> 'correction' OR requested_by IN ('technician', 'backend'))
                ) STRICT, WITHOUT ROWID;
                """)
        }
        // Health projections (issue 15): a key's rows are one device's metric over one day, so the rollup reads an
        // index range instead of the tenant's samples.
        migrator.registerMigration("v3") { db in
            try db.execute(sql: "CREATE INDEX health_sample_projection ON health_sample (tenant, device_uid, metric_code, effective_at)")
        }
        // Firmware updates' endings (issue 16): one row per update a gateway finished, never changed.
        migrator.registerMigration("v4") { db in
            try db.execute(sql: """
                CREATE TABLE firmware_update (
                    tenant TEXT NOT NULL,
                    uid TEXT NOT NULL CHECK (length(uid) = 36),
                    serial TEXT CHECK (serial IS NULL OR length(serial) BETWEEN 1 AND 32),
                    address TEXT NOT NULL CHECK (length(address) = 17),
                    outcome TEXT NOT NULL CHECK (outcome IN ('confirmed', 'running-in-test', 'already-running', 'reverted', 'failed', 'cancelled')),
                    image_version TEXT NOT NULL CHECK (length(image_version) BETWEEN 1 AND 64),
                    finished_at INTEGER NOT NULL,
                    document TEXT NOT NULL CHECK (json_valid(document)),
                    gateway TEXT NOT NULL,
                    PRIMARY KEY (tenant, uid),
                    FOREIGN KEY (tenant, serial) REFERENCES device (tenant, serial)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX firmware_update_device ON firmware_update (tenant, address, finished_at);
                """)
        }
        return migrator
    }
}
