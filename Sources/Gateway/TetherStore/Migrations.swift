import GRDB

/// The schema's history. A migration is never edited once it has shipped: a change is a new migration appended
/// below, and a database created by any release migrates forward to the newest schema.
///
/// Conventions (docs/design/store.md): tables and columns are camelCase like the record types; every instant is an
/// INTEGER of nanoseconds since the Unix epoch (UTC) in a column ending in `At` or `Nanoseconds`; rules the data
/// must keep are constraints, so SQLite refuses a bad row whatever code wrote it.
enum Migrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1", migrate: v1)
        migrator.registerMigration("v2-outbox-ready-index", migrate: v2OutboxReadyIndex)
        migrator.registerMigration("v3-settings-server-base", migrate: v3SettingsServerBase)
        migrator.registerMigration("v4-peripheral-registry", migrate: v4PeripheralRegistry)
        migrator.registerMigration("v5-outbox-entity-types", migrate: v5OutboxEntityTypes)
        migrator.registerMigration("v6-health-tables", migrate: v6HealthTables)
        migrator.registerMigration("v7-peripheral-adopted", migrate: v7PeripheralAdopted)
        migrator.registerMigration("v8-glucose-specimen-codes", migrate: v8GlucoseSpecimenCodes)
        migrator.registerMigration("v9-peripheral-pnp-id", migrate: v9PeripheralPnPID)
        migrator.registerMigration("v10-health-projections", migrate: v10HealthProjections)
        migrator.registerMigration("v11-health-dedup-keys-by-address", migrate: v11HealthDedupKeysByAddress)
        migrator.registerMigration("v12-firmware-updates", migrate: v12FirmwareUpdates)
        migrator.registerMigration("v13-firmware-update-outcomes", migrate: v13FirmwareUpdateOutcomes)
        return migrator
    }

    /// Released with the first store. Do not edit.
    private static func v1(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE device (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                serial TEXT NOT NULL UNIQUE CHECK (length(serial) BETWEEN 1 AND 32),
                address TEXT UNIQUE CHECK (address IS NULL OR length(address) > 0),
                hardwareRevision INTEGER CHECK (hardwareRevision BETWEEN 0 AND 255),
                firmwareVersion TEXT CHECK (firmwareVersion IS NULL OR length(firmwareVersion) > 0),
                protocolVersion INTEGER CHECK (protocolVersion BETWEEN 1 AND 255),
                capabilities INTEGER NOT NULL DEFAULT 0 CHECK (capabilities BETWEEN 0 AND 65535),
                latestBoot INTEGER CHECK (latestBoot BETWEEN 0 AND 65535),
                pairingState TEXT NOT NULL DEFAULT 'discovered'
                    CHECK (pairingState IN ('discovered', 'paired', 'unpaired', 'blocked')),
                firstSeenAt INTEGER NOT NULL,
                lastSeenAt INTEGER NOT NULL CHECK (lastSeenAt >= firstSeenAt)
            ) STRICT;

            CREATE TABLE boot (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                deviceId INTEGER NOT NULL REFERENCES device(id),
                bootCounter INTEGER NOT NULL CHECK (bootCounter BETWEEN 0 AND 65535),
                firstSeenAt INTEGER NOT NULL,
                -- Retention pruned events of this boot up to this sequence. Every sequence up to it was stored,
                -- except those in prunedGaps (JSON [[from, through], ...]), which never arrived (§8.8).
                prunedThroughSequence INTEGER NOT NULL DEFAULT -1 CHECK (prunedThroughSequence >= -1),
                prunedGaps TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(prunedGaps) AND json_type(prunedGaps) = 'array'),
                UNIQUE (deviceId, bootCounter)
            ) STRICT;

            CREATE TABLE timeAnchor (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                deviceId INTEGER NOT NULL,
                bootCounter INTEGER NOT NULL,
                deviceMicroseconds INTEGER NOT NULL CHECK (deviceMicroseconds >= 0),
                gatewayNanoseconds INTEGER NOT NULL,
                uncertaintyNanoseconds INTEGER NOT NULL CHECK (uncertaintyNanoseconds >= 0),
                roundTripNanoseconds INTEGER NOT NULL CHECK (roundTripNanoseconds >= 0),
                FOREIGN KEY (deviceId, bootCounter) REFERENCES boot(deviceId, bootCounter),
                UNIQUE (deviceId, bootCounter, deviceMicroseconds, gatewayNanoseconds)
            ) STRICT;

            CREATE TABLE consumptionEvent (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                deviceId INTEGER NOT NULL,
                bootCounter INTEGER NOT NULL,
                sequence INTEGER NOT NULL CHECK (sequence >= 0),
                ticks INTEGER NOT NULL CHECK (ticks >= 0),
                utcNanoseconds INTEGER,
                uncertaintyNanoseconds INTEGER CHECK (uncertaintyNanoseconds >= 0),
                durationMilliseconds INTEGER NOT NULL CHECK (durationMilliseconds BETWEEN 0 AND 65535),
                intensity INTEGER NOT NULL CHECK (intensity BETWEEN 0 AND 100),
                receivedAt INTEGER NOT NULL,
                syncedAt INTEGER,
                CHECK ((utcNanoseconds IS NULL) = (uncertaintyNanoseconds IS NULL)),
                FOREIGN KEY (deviceId, bootCounter) REFERENCES boot(deviceId, bootCounter),
                UNIQUE (deviceId, bootCounter, sequence)
            ) STRICT;
            CREATE INDEX consumptionEventSynced ON consumptionEvent(syncedAt) WHERE syncedAt IS NOT NULL;

            CREATE TABLE deviceTelemetry (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                deviceId INTEGER NOT NULL REFERENCES device(id),
                kind TEXT NOT NULL CHECK (kind IN ('battery', 'sleep')),
                receivedAt INTEGER NOT NULL,
                batteryMillivolts INTEGER CHECK (batteryMillivolts BETWEEN 0 AND 65535),
                batteryPercent INTEGER CHECK (batteryPercent BETWEEN 0 AND 100),
                isCharging INTEGER CHECK (isCharging IN (0, 1)),
                sleepReason INTEGER CHECK (sleepReason BETWEEN 0 AND 255),
                wakeAfterSeconds INTEGER CHECK (wakeAfterSeconds BETWEEN 0 AND 4294967294),
                syncedAt INTEGER,
                CHECK (kind <> 'battery' OR (batteryMillivolts IS NOT NULL AND batteryPercent IS NOT NULL AND isCharging IS NOT NULL)),
                CHECK (kind <> 'sleep' OR sleepReason IS NOT NULL),
                UNIQUE (deviceId, kind, receivedAt)
            ) STRICT;
            CREATE INDEX deviceTelemetrySynced ON deviceTelemetry(syncedAt) WHERE syncedAt IS NOT NULL;

            CREATE TABLE deviceSettings (
                deviceId INTEGER PRIMARY KEY REFERENCES device(id),
                desiredVersion INTEGER CHECK (desiredVersion BETWEEN 0 AND 4294967295),
                desiredSettings TEXT CHECK (desiredSettings IS NULL OR json_valid(desiredSettings)),
                desiredChangedBy TEXT CHECK (desiredChangedBy IN ('backend', 'technician')),
                desiredChangedAt INTEGER,
                reportedVersion INTEGER CHECK (reportedVersion BETWEEN 0 AND 4294967295),
                reportedSettings TEXT CHECK (reportedSettings IS NULL OR json_valid(reportedSettings)),
                reportedAt INTEGER,
                baseVersion INTEGER CHECK (baseVersion BETWEEN 0 AND 4294967295),
                baseSettings TEXT CHECK (baseSettings IS NULL OR json_valid(baseSettings)),
                conflicts TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(conflicts) AND json_type(conflicts) = 'array'),
                updatedAt INTEGER NOT NULL,
                CHECK ((desiredVersion IS NULL) = (desiredSettings IS NULL)),
                CHECK ((desiredVersion IS NULL) = (desiredChangedBy IS NULL)),
                CHECK ((desiredVersion IS NULL) = (desiredChangedAt IS NULL)),
                CHECK ((reportedVersion IS NULL) = (reportedSettings IS NULL)),
                CHECK ((reportedVersion IS NULL) = (reportedAt IS NULL)),
                CHECK ((baseVersion IS NULL) = (baseSettings IS NULL))
            ) STRICT;

            CREATE TABLE outboxCommand (
                -- Enqueue order; commands of one entity are pushed in this order.
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                -- UUIDv7, the idempotency key the backend deduplicates on.
                id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
                entityType TEXT NOT NULL CHECK (entityType IN ('device', 'consumptionEvent', 'deviceTelemetry', 'deviceSettings')),
                entityId TEXT NOT NULL CHECK (length(entityId) > 0),
                operation TEXT NOT NULL CHECK (operation IN ('create', 'update', 'delete')),
                payload TEXT NOT NULL CHECK (json_valid(payload)),
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'in_progress', 'failed', 'conflict', 'dead_letter')),
                attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                nextAttemptAt INTEGER NOT NULL,
                -- Set when the command first left the gateway: from then on it is never coalesced or rewritten.
                firstAttemptAt INTEGER,
                leaseToken TEXT,
                leaseExpiresAt INTEGER,
                lastError TEXT,
                createdAt INTEGER NOT NULL,
                updatedAt INTEGER NOT NULL,
                CHECK ((status = 'in_progress') = (leaseToken IS NOT NULL)),
                CHECK ((leaseToken IS NULL) = (leaseExpiresAt IS NULL)),
                CHECK (attempts = 0 OR firstAttemptAt IS NOT NULL)
            ) STRICT;
            CREATE INDEX outboxCommandEntity ON outboxCommand(entityType, entityId, seq);
            CREATE INDEX outboxCommandStatus ON outboxCommand(status, nextAttemptAt);

            CREATE TABLE syncCursor (
                name TEXT PRIMARY KEY CHECK (length(name) > 0),
                value TEXT NOT NULL,
                updatedAt INTEGER NOT NULL
            ) STRICT;
            """)
    }

    /// The claim walks the ready commands in push order and stops at its limit (`Outbox.claim` names this index):
    /// without it SQLite picked the status index and sorted every ready command per claim, ~200-400 ms per claim
    /// of 1000 with a million queued (docs/measurements/sync.md).
    private static func v2OutboxReadyIndex(_ db: Database) throws {
        try db.execute(sql: """
            CREATE INDEX outboxCommandReady ON outboxCommand(seq) WHERE status IN ('pending', 'failed');
            """)
    }

    /// Issue 5 ("409 → for device settings a three-way merge"): a technician's change must carry the server
    /// version it was based on, captured with the change itself. `serverVersion`/`serverSettings` are the server's
    /// settings version the local desired settings build on and the server's desired settings at that version.
    private static func v3SettingsServerBase(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE deviceSettings ADD COLUMN serverVersion INTEGER CHECK (serverVersion >= 0);
            ALTER TABLE deviceSettings ADD COLUMN serverSettings TEXT CHECK (serverSettings IS NULL OR json_valid(serverSettings));
            """)
    }

    /// Issue 12 ("Device identity"): a registry row per BLE peripheral, whatever kind of device it is. `device`
    /// stays the Tether link device's own record (serial, boots, anchors, settings), linked 1:1 by `linkDeviceId`;
    /// a standard health or SMP device has a peripheral row and no `device` row. `uid` is the gateway-assigned id
    /// (UUIDv7) other records and the backend name it by; `identityAddress` is BlueZ's address for the bonded device
    /// (its identity address once bonding resolved a private one). The Device Information Service (0x180A) fields
    /// are what a device says about itself. Every existing `device` row gets its peripheral row here.
    private static func v4PeripheralRegistry(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE peripheral (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                uid TEXT NOT NULL UNIQUE CHECK (length(uid) = 36),
                identityAddress TEXT UNIQUE CHECK (identityAddress IS NULL OR length(identityAddress) = 17),
                kinds TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(kinds) AND json_type(kinds) = 'array'),
                unsupportedServices TEXT CHECK (unsupportedServices IS NULL OR (json_valid(unsupportedServices) AND json_type(unsupportedServices) = 'array')),
                linkDeviceId INTEGER UNIQUE REFERENCES device(id),
                manufacturerName TEXT,
                modelNumber TEXT,
                serialNumber TEXT,
                hardwareRevision TEXT,
                firmwareRevision TEXT,
                softwareRevision TEXT,
                systemId TEXT CHECK (systemId IS NULL OR length(systemId) = 16),
                firstSeenAt INTEGER NOT NULL,
                lastSeenAt INTEGER NOT NULL CHECK (lastSeenAt >= firstSeenAt),
                CHECK (identityAddress IS NOT NULL OR linkDeviceId IS NOT NULL)
            ) STRICT;
            """)
        var random = SystemRandomNumberGenerator()
        let devices = try Row.fetchAll(db, sql: "SELECT id, address, firstSeenAt, lastSeenAt FROM device ORDER BY id")
        for device in devices {
            let firstSeenAt: Int64 = device["firstSeenAt"]
            let uid = UUIDv7.lowercaseString(UUIDv7.make(unixMilliseconds: firstSeenAt / 1_000_000, using: &random))
            try db.execute(
                sql: """
                    INSERT INTO peripheral (uid, identityAddress, kinds, linkDeviceId, firstSeenAt, lastSeenAt)
                    VALUES (?, ?, '["tether-link"]', ?, ?, ?)
                    """,
                arguments: [uid, device["address"] as String?, device["id"] as Int64, firstSeenAt, device["lastSeenAt"] as Int64])
        }
    }

    /// Issue 12 ("One gateway, many kinds of device"): v1 listed the outbox's entity types in a CHECK, and SQLite
    /// can change a CHECK only by rebuilding the table, so every new kind of entity would have meant a rebuild. The
    /// types become rows of `outboxEntityType` that `outboxCommand.entityType` references: a later kind is one
    /// INSERT in its own migration (and its case in `OutboxEntity`), and SQLite still refuses an unknown type.
    ///
    /// The rebuild follows SQLite's "Making Other Kinds Of Table Schema Changes" (lang_altertable.html §7): new
    /// table, copy, drop, rename, indexes again. GRDB runs a migration with foreign keys checked at its end. The
    /// AUTOINCREMENT counter is carried over, so a seq the old table handed out (and then pruned) is never reused.
    private static func v5OutboxEntityTypes(_ db: Database) throws {
        let lastSeq = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outboxCommand'")
        try db.execute(sql: """
            CREATE TABLE outboxEntityType (
                name TEXT PRIMARY KEY CHECK (length(name) > 0)
            ) STRICT, WITHOUT ROWID;
            INSERT INTO outboxEntityType (name) VALUES ('device'), ('consumptionEvent'), ('deviceTelemetry'), ('deviceSettings');

            CREATE TABLE outboxCommandNew (
                -- Enqueue order; commands of one entity are pushed in this order.
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                -- UUIDv7, the idempotency key the backend deduplicates on.
                id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
                entityType TEXT NOT NULL REFERENCES outboxEntityType(name),
                entityId TEXT NOT NULL CHECK (length(entityId) > 0),
                operation TEXT NOT NULL CHECK (operation IN ('create', 'update', 'delete')),
                payload TEXT NOT NULL CHECK (json_valid(payload)),
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'in_progress', 'failed', 'conflict', 'dead_letter')),
                attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                nextAttemptAt INTEGER NOT NULL,
                -- Set when the command first left the gateway: from then on it is never coalesced or rewritten.
                firstAttemptAt INTEGER,
                leaseToken TEXT,
                leaseExpiresAt INTEGER,
                lastError TEXT,
                createdAt INTEGER NOT NULL,
                updatedAt INTEGER NOT NULL,
                CHECK ((status = 'in_progress') = (leaseToken IS NOT NULL)),
                CHECK ((leaseToken IS NULL) = (leaseExpiresAt IS NULL)),
                CHECK (attempts = 0 OR firstAttemptAt IS NOT NULL)
            ) STRICT;
            INSERT INTO outboxCommandNew (seq, id, entityType, entityId, operation, payload, status, attempts, nextAttemptAt,
                                          firstAttemptAt, leaseToken, leaseExpiresAt, lastError, createdAt, updatedAt)
                SELECT seq, id, entityType, entityId, operation, payload, status, attempts, nextAttemptAt,
                       firstAttemptAt, leaseToken, leaseExpiresAt, lastError, createdAt, updatedAt
                FROM outboxCommand ORDER BY seq;
            DROP TABLE outboxCommand;
            ALTER TABLE outboxCommandNew RENAME TO outboxCommand;
            CREATE INDEX outboxCommandEntity ON outboxCommand(entityType, entityId, seq);
            CREATE INDEX outboxCommandStatus ON outboxCommand(status, nextAttemptAt);
            CREATE INDEX outboxCommandReady ON outboxCommand(seq) WHERE status IN ('pending', 'failed');
            """)
        if let lastSeq {
            try db.execute(sql: "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'outboxCommand'", arguments: [lastSeq])
            if db.changesCount == 0 {  // every row had been pruned: the copy inserted none, so there is no counter yet
                try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('outboxCommand', ?)", arguments: [lastSeq])
            }
        }
    }

    /// Issue 14 ("Health telemetry, part 1"): standard health devices' samples, the cursors of their stored-record
    /// streams, and the deletion queue of the change lane (docs/design/store.md, "Health tables"). `HealthStore` is
    /// the only writer. The triggers repeat the rules `HealthStore` checks in Swift (cursors only move forward, an
    /// epoch follows the one before, a deleted sample has its deletion row) so that no code can break them.
    private static func v6HealthTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE healthSample (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                uid TEXT NOT NULL UNIQUE CHECK (length(uid) = 36),
                -- One reading, however often it arrives (HealthDedupKey has the rule).
                dedupKey TEXT NOT NULL UNIQUE CHECK (length(dedupKey) BETWEEN 1 AND 512),
                peripheralId INTEGER NOT NULL REFERENCES peripheral(id),
                -- 128-bit lowercase, as BlueZ spells it.
                characteristic TEXT NOT NULL CHECK (length(characteristic) = 36 AND characteristic = lower(characteristic)),
                -- IEEE 11073-10101 MDC code: partition << 16 | term code.
                metricCode INTEGER NOT NULL CHECK (metricCode BETWEEN 1 AND 4294967295),
                -- The n-th value of this metric in its record (RR intervals), 0 for the first.
                occurrence INTEGER NOT NULL DEFAULT 0 CHECK (occurrence BETWEEN 0 AND 255),
                -- IEEE 11073-20601 Annex F.8: a special value is a status, never a number.
                valueStatus TEXT NOT NULL
                    CHECK (valueStatus IN ('number', 'nan', 'nres', 'positive-infinity', 'negative-infinity', 'reserved')),
                -- The value as the device reported it: mantissa · 10^exponent in reportedUnit (UCUM).
                reportedMantissa INTEGER,
                reportedExponent INTEGER CHECK (reportedExponent BETWEEN -128 AND 127),
                reportedUnit TEXT NOT NULL CHECK (length(reportedUnit) BETWEEN 1 AND 64),
                -- The same value converted exactly to canonicalUnit (UCUM), as a plain decimal numeral.
                canonicalValue TEXT CHECK (canonicalValue IS NULL OR (
                    length(canonicalValue) BETWEEN 1 AND 80
                    AND (canonicalValue GLOB '[0-9]*' OR canonicalValue GLOB '-[0-9]*')
                    AND canonicalValue GLOB '*[0-9]'
                    AND NOT canonicalValue GLOB '?*[^0-9.]*'
                    AND NOT canonicalValue GLOB '*.*.*')),
                canonicalUnit TEXT NOT NULL CHECK (length(canonicalUnit) BETWEEN 1 AND 64),
                effectiveAt INTEGER NOT NULL,
                -- The device's own time as it sent it (text), and how effectiveAt was derived from it.
                deviceTime TEXT CHECK (deviceTime IS NULL OR length(deviceTime) BETWEEN 1 AND 64),
                timeBasis TEXT NOT NULL
                    CHECK (timeBasis IN ('clock-set-by-gateway', 'local-time-with-offset', 'coincident-clock-reading',
                                         'cgm-session-start', 'device-time-unverified', 'receipt')),
                skewMilliseconds INTEGER,
                userIndex INTEGER CHECK (userIndex BETWEEN 0 AND 255),
                recordSequence INTEGER CHECK (recordSequence >= 0),
                epoch INTEGER NOT NULL CHECK (epoch >= 0),
                lane TEXT NOT NULL CHECK (lane IN ('hot', 'cold', 'change')),
                -- What the device sent (two ATT values at most: a multiple-packet record), to decode again after a
                -- parser fix; a correction (lane 'change') has none.
                rawBytes BLOB CHECK (rawBytes IS NULL OR length(rawBytes) BETWEEN 1 AND 1024),
                parserVersion INTEGER CHECK (parserVersion >= 1),
                receivedAt INTEGER NOT NULL,
                -- Set with the row's healthDeletion (a trigger does it); the row stays so that its dedup key does.
                deletedAt INTEGER,
                uploadState TEXT NOT NULL DEFAULT 'pending'
                    CHECK (uploadState IN ('pending', 'leased', 'uploaded', 'failed', 'rejected')),
                uploadRequestId TEXT CHECK (uploadRequestId IS NULL OR length(uploadRequestId) = 36),
                leaseExpiresAt INTEGER,
                uploadAttempts INTEGER NOT NULL DEFAULT 0 CHECK (uploadAttempts >= 0),
                rejectedReason TEXT CHECK (rejectedReason IS NULL OR length(rejectedReason) > 0),
                CHECK ((valueStatus = 'number') = (reportedMantissa IS NOT NULL)),
                CHECK ((reportedMantissa IS NULL) = (reportedExponent IS NULL)),
                CHECK ((valueStatus = 'number') = (canonicalValue IS NOT NULL)),
                CHECK (timeBasis = 'receipt' OR deviceTime IS NOT NULL),
                CHECK (lane = 'change' OR (rawBytes IS NOT NULL AND parserVersion IS NOT NULL)),
                CHECK ((uploadState = 'leased') = (leaseExpiresAt IS NOT NULL)),
                CHECK (uploadState NOT IN ('leased', 'uploaded') OR uploadRequestId IS NOT NULL),
                CHECK ((uploadState = 'rejected') = (rejectedReason IS NOT NULL)),
                CHECK (uploadState = 'pending' OR uploadAttempts > 0)
            ) STRICT;
            -- Part 2's claim: what is still to upload, oldest first, without the uploaded bulk.
            CREATE INDEX healthSampleUpload ON healthSample(uploadState, id) WHERE uploadState <> 'uploaded';
            -- `tether health samples`: one device, one metric, a time range.
            CREATE INDEX healthSampleSeries ON healthSample(peripheralId, metricCode, effectiveAt);

            -- One row per record stream and epoch; the stream's cursor is its latest epoch's row.
            CREATE TABLE healthIngestCursor (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                peripheralId INTEGER NOT NULL REFERENCES peripheral(id),
                characteristic TEXT NOT NULL CHECK (length(characteristic) = 36 AND characteristic = lower(characteristic)),
                userIndex INTEGER CHECK (userIndex BETWEEN 0 AND 255),
                epoch INTEGER NOT NULL CHECK (epoch >= 0),
                -- RACP filter type: a sequence number (GLS) or a time offset in minutes (CGMS).
                positionKind TEXT NOT NULL CHECK (positionKind IN ('sequence', 'time-offset')),
                -- The highest record stored in this epoch; NULL until the epoch has one.
                position INTEGER CHECK (position >= 0),
                startReason TEXT NOT NULL CHECK (startReason IN ('first', 'sequence-reset', 'session-restarted')),
                startedAt INTEGER NOT NULL,
                updatedAt INTEGER NOT NULL,
                CHECK ((epoch = 0) = (startReason = 'first'))
            ) STRICT;
            CREATE UNIQUE INDEX healthIngestCursorStream ON healthIngestCursor(peripheralId, characteristic, ifnull(userIndex, -1), epoch);
            CREATE TRIGGER healthIngestCursorEpochInOrder BEFORE INSERT ON healthIngestCursor
            WHEN NEW.epoch <> (SELECT ifnull(max(epoch) + 1, 0) FROM healthIngestCursor
                               WHERE peripheralId = NEW.peripheralId AND characteristic = NEW.characteristic
                                 AND ifnull(userIndex, -1) = ifnull(NEW.userIndex, -1))
            BEGIN SELECT RAISE(ABORT, 'healthIngestCursor: an epoch must follow the stream''s latest'); END;
            CREATE TRIGGER healthIngestCursorForwardOnly BEFORE UPDATE ON healthIngestCursor
            WHEN NEW.peripheralId IS NOT OLD.peripheralId OR NEW.characteristic IS NOT OLD.characteristic
                OR NEW.userIndex IS NOT OLD.userIndex OR NEW.epoch IS NOT OLD.epoch OR NEW.positionKind IS NOT OLD.positionKind
                OR (OLD.position IS NOT NULL AND (NEW.position IS NULL OR NEW.position < OLD.position))
                OR EXISTS (SELECT 1 FROM healthIngestCursor later
                           WHERE later.peripheralId = OLD.peripheralId AND later.characteristic = OLD.characteristic
                             AND ifnull(later.userIndex, -1) = ifnull(OLD.userIndex, -1) AND later.epoch > OLD.epoch)
            BEGIN SELECT RAISE(ABORT, 'healthIngestCursor: a cursor moves only forward, in its stream''s latest epoch'); END;

            -- The change lane's queue: each row is a tombstone (and for a correction, the replacement) for part 2 to
            -- upload. A sample is deleted once.
            CREATE TABLE healthDeletion (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                uid TEXT NOT NULL UNIQUE CHECK (length(uid) = 36),
                sampleId INTEGER NOT NULL UNIQUE REFERENCES healthSample(id),
                reason TEXT NOT NULL CHECK (reason IN ('technician', 'backend', 'vanished-from-device', 'correction')),
                requestedBy TEXT NOT NULL CHECK (requestedBy IN ('technician', 'backend', 'gateway')),
                replacementSampleId INTEGER UNIQUE REFERENCES healthSample(id),
                note TEXT CHECK (note IS NULL OR length(note) BETWEEN 1 AND 1000),
                requestedAt INTEGER NOT NULL,
                uploadState TEXT NOT NULL DEFAULT 'pending'
                    CHECK (uploadState IN ('pending', 'leased', 'uploaded', 'failed', 'rejected')),
                uploadRequestId TEXT CHECK (uploadRequestId IS NULL OR length(uploadRequestId) = 36),
                leaseExpiresAt INTEGER,
                uploadAttempts INTEGER NOT NULL DEFAULT 0 CHECK (uploadAttempts >= 0),
                rejectedReason TEXT CHECK (rejectedReason IS NULL OR length(rejectedReason) > 0),
                CHECK ((reason = 'correction') = (replacementSampleId IS NOT NULL)),
                CHECK (replacementSampleId IS NOT sampleId),
                CHECK (reason <> 'technician' OR requestedBy = 'technician'),
                CHECK (reason <> 'backend' OR requestedBy = 'backend'),
                CHECK (reason <> 'vanished-from-device' OR requestedBy = 'gateway'),
                CHECK (reason <> 'correction' OR requestedBy IN ('technician', 'backend')),
                CHECK ((uploadState = 'leased') = (leaseExpiresAt IS NOT NULL)),
                CHECK (uploadState NOT IN ('leased', 'uploaded') OR uploadRequestId IS NOT NULL),
                CHECK ((uploadState = 'rejected') = (rejectedReason IS NOT NULL)),
                CHECK (uploadState = 'pending' OR uploadAttempts > 0)
            ) STRICT;
            CREATE INDEX healthDeletionUpload ON healthDeletion(uploadState, id) WHERE uploadState <> 'uploaded';
            -- The deletion row and the sample's mark are one write: neither exists without the other.
            CREATE TRIGGER healthDeletionMarksSample AFTER INSERT ON healthDeletion
            BEGIN UPDATE healthSample SET deletedAt = NEW.requestedAt WHERE id = NEW.sampleId; END;
            CREATE TRIGGER healthSampleDeletedOnlyByDeletion BEFORE UPDATE OF deletedAt ON healthSample
            WHEN OLD.deletedAt IS NOT NULL
                OR (NEW.deletedAt IS NOT NULL AND NOT EXISTS (SELECT 1 FROM healthDeletion WHERE sampleId = NEW.id))
            BEGIN SELECT RAISE(ABORT, 'healthSample: deletedAt is set by its healthDeletion row, once'); END;
            """)
    }

    /// Issue 17 (a 500-kill run): a pairing was durable only once a Tether device named itself (its `device` row),
    /// so a gateway killed between `Pair` and the first DEVICE_INFO forgot the device for good, and a health device
    /// (no `device` row at all) was forgotten at every restart. `adoptedAt` is when the gateway adopted the bonded
    /// peripheral (pair or adopt; NULL once forgotten): at start it wants every adopted peripheral. Peripherals of
    /// Tether devices the registry has as paired are adopted here.
    private static func v7PeripheralAdopted(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE peripheral ADD COLUMN adoptedAt INTEGER;
            UPDATE peripheral SET adoptedAt = firstSeenAt
            WHERE linkDeviceId IN (SELECT id FROM device WHERE pairingState = 'paired');
            """)
    }

    /// The Device Information Service's PnP ID (0x2A50, DIS v1.1 §3.9): all four fields or none.
    private static func v9PeripheralPnPID(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE peripheral ADD COLUMN pnpVendorIdSource INTEGER CHECK (pnpVendorIdSource IN (1, 2));
            ALTER TABLE peripheral ADD COLUMN pnpVendorId INTEGER CHECK (pnpVendorId BETWEEN 0 AND 65535);
            ALTER TABLE peripheral ADD COLUMN pnpProductId INTEGER CHECK (pnpProductId BETWEEN 0 AND 65535);
            ALTER TABLE peripheral ADD COLUMN pnpProductVersion INTEGER CHECK (pnpProductVersion BETWEEN 0 AND 65535);
            CREATE TRIGGER peripheralPnPIDWholeOnUpdate BEFORE UPDATE OF pnpVendorIdSource, pnpVendorId, pnpProductId, pnpProductVersion ON peripheral
            WHEN (NEW.pnpVendorIdSource IS NULL) + (NEW.pnpVendorId IS NULL) + (NEW.pnpProductId IS NULL) + (NEW.pnpProductVersion IS NULL) NOT IN (0, 4)
            BEGIN SELECT RAISE(ABORT, 'peripheral: a PnP ID has all four fields or none'); END;
            CREATE TRIGGER peripheralPnPIDWholeOnInsert BEFORE INSERT ON peripheral
            WHEN (NEW.pnpVendorIdSource IS NULL) + (NEW.pnpVendorId IS NULL) + (NEW.pnpProductId IS NULL) + (NEW.pnpProductVersion IS NULL) NOT IN (0, 4)
            BEGIN SELECT RAISE(ABORT, 'peripheral: a PnP ID has all four fields or none'); END;
            """)
    }
}
