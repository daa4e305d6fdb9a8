import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Migrations: from empty, from a populated first version, and v1 frozen")
struct MigrationTests {
    static let tables = [
        "boot", "consumptionEvent", "device", "deviceSettings", "deviceTelemetry", "firmwareUpdate", "healthDeletion", "healthIngestCursor", "healthProjection", "healthSample",
        "outboxCommand", "outboxEntityType", "peripheral", "syncCursor", "timeAnchor",
    ]

    /// The schema text of a database migrated up to `migration`, in a stable order.
    static func schema(upTo migration: String) throws -> String {
        try schemaEntries(upTo: migration).joined(separator: "\n")
    }

    /// One `type name: sql` entry per schema object, in a stable order.
    static func schemaEntries(upTo migration: String) throws -> [String] {
        let queue = try DatabaseQueue()
        try Migrations.migrator.migrate(queue, upTo: migration)
        return try queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT type, name, sql FROM sqlite_master
                WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY type, name
                """).map { "\($0["type"] as String? ?? "") \($0["name"] as String? ?? ""): \($0["sql"] as String? ?? "")" }
        }
    }

    /// FNV-1a, 64 bits: a fingerprint that any edit of the schema text changes.
    static func fingerprint(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// Every migration, as `appliedMigrations()` lists them: sorted by name, so v10 comes after v1 (v1 is frozen; later
    /// ones only add).
    static let migrations = ["v1", "v10-health-projections", "v11-health-dedup-keys-by-address", "v12-firmware-updates", "v13-firmware-update-outcomes", "v2-outbox-ready-index", "v3-settings-server-base", "v4-peripheral-registry", "v5-outbox-entity-types", "v6-health-tables", "v7-peripheral-adopted", "v8-glucose-specimen-codes", "v9-peripheral-pnp-id"]

    @Test("a new file gets the whole schema, sound")
    func fromEmpty() throws {
        let directory = try TemporaryDirectory()
        let database = try GatewayDatabase(path: directory.file("new.sqlite"))
        #expect(try database.appliedMigrations() == Self.migrations)
        #expect(try database.integrityProblems().isEmpty)
        let tables = try database.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY name") }
        #expect(tables == Self.tables)
        let foreignKeys = try database.write { db in try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") }
        #expect(foreignKeys == true)
        // Opening again migrates nothing.
        #expect(try GatewayDatabase(path: directory.file("new.sqlite")).appliedMigrations() == Self.migrations)
    }

    @Test("the connection that commits runs WAL with synchronous=FULL (GRDB's pool would leave it at NORMAL)", arguments: [
        (GatewayDatabase.Configuration.Synchronous.full, 2), (.normal, 1),
    ])
    func writerDurability(_ synchronous: GatewayDatabase.Configuration.Synchronous, _ level: Int) throws {
        let directory = try TemporaryDirectory()
        var configuration = GatewayDatabase.Configuration()
        configuration.synchronous = synchronous
        let database = try GatewayDatabase(path: directory.file("durable.sqlite"), configuration: configuration)
        let durability = try database.writerDurability()
        #expect(durability.synchronous == level)
        #expect(durability.journalMode == "wal")
        // Still so after a commit has used the writer.
        var random = SplitMix64(seed: 1)
        _ = try ConsumptionService(database: database).apply(PersistBatch(id: 1, items: [.hit(hit("W", sequence: 0))]), at: simulationStart, using: &random)
        #expect(try database.writerDurability().synchronous == level)
    }

    @Test("a checkpoint from the store's own checkpoint connection empties the WAL while the writer keeps committing")
    func backgroundCheckpoint() async throws {
        let directory = try TemporaryDirectory()
        var configuration = GatewayDatabase.Configuration()
        configuration.walAutocheckpointPages = 1_000_000  // only the background checkpointer runs
        let database = try GatewayDatabase(path: directory.file("wal.sqlite"), configuration: configuration)
        let service = ConsumptionService(database: database)
        for batch in 0..<20 {
            try store((0..<20).map { .hit(hit("CK", sequence: Int64(batch * 20 + $0))) }, id: PersistBatch.ID(batch), in: service)
        }
        let walBytes = { (try? FileManager.default.attributesOfItem(atPath: directory.file("wal.sqlite-wal"))[.size] as? Int) ?? 0 }
        #expect(walBytes() > 100_000)
        let result = try #require(try database.checkpoint())
        #expect(result.walFrames > 0)
        #expect(result.checkpointedFrames == result.walFrames)
        // The next commit starts the WAL over instead of growing it.
        try store([.hit(hit("CK", sequence: 1000))], id: 99, in: service)
        let next = try #require(try database.checkpoint())
        #expect(next.walFrames > 0 && next.walFrames < result.walFrames, "\(next.walFrames) frames after \(result.walFrames)")
        #expect(try GatewayDatabase.inMemory().checkpoint() == nil)

        // The service loop ends with its task.
        let loop = Task { await database.runCheckpoints(every: .milliseconds(5)) }
        loop.cancel()
        await loop.value
    }

    @Test("migration v1 is frozen: a released migration is never edited (add a new one instead)")
    func v1IsFrozen() throws {
        let schema = try Self.schema(upTo: "v1")
        #expect(Self.fingerprint(schema) == 16_274_779_899_196_912_188, "v1's schema changed; its text is now:\n\(schema)")
    }

    @Test("migration v6 (health tables) is frozen: what it adds to v5's schema never changes")
    func v6IsFrozen() throws {
        let before = Set(try Self.schemaEntries(upTo: "v5-outbox-entity-types"))
        let added = try Self.schemaEntries(upTo: "v6-health-tables").filter { !before.contains($0) }.joined(separator: "\n")
        #expect(Self.fingerprint(added) == 5_899_071_747_160_948_458, "v6's schema changed; what it adds is now:\n\(added)")
    }

    @Test("migration v10 (health projections) is frozen: what it adds to v9's schema never changes")
    func v10IsFrozen() throws {
        let before = Set(try Self.schemaEntries(upTo: "v9-peripheral-pnp-id"))
        let added = try Self.schemaEntries(upTo: "v10-health-projections").filter { !before.contains($0) }.joined(separator: "\n")
        #expect(Self.fingerprint(added) == 724_285_769_902_646_899, "v10's schema changed; what it adds is now:\n\(added)")
    }

    @Test("a database populated by the first version opens, keeps its rows and works")
    func fromPopulatedFirstVersion() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v1.sqlite")
        // Written the way a v1 gateway wrote them, with plain SQL so later code changes do not alter this fixture.
        do {
            let queue = try DatabaseQueue(path: path)
            try Migrations.migrator.migrate(queue, upTo: "v1")
            try queue.write { db in
                try db.execute(sql: """
                    INSERT INTO device (id, serial, address, hardwareRevision, firmwareVersion, protocolVersion, capabilities, latestBoot, pairingState, firstSeenAt, lastSeenAt)
                    VALUES (1, 'OLD-1', 'AA:00:00:00:00:01', 3, '1.4.2', 1, 11, 4, 'paired', 1793520000000000000, 1793520060000000000);
                    INSERT INTO device (id, serial, address, firstSeenAt, lastSeenAt) VALUES (2, 'OLD-2', NULL, 1793520100000000000, 1793520100000000000);
                    INSERT INTO boot (deviceId, bootCounter, firstSeenAt) VALUES (1, 4, 1793520000000000000);
                    INSERT INTO timeAnchor (deviceId, bootCounter, deviceMicroseconds, gatewayNanoseconds, uncertaintyNanoseconds, roundTripNanoseconds)
                    VALUES (1, 4, 5000000, 1793520005000000000, 3000000, 6000000);
                    INSERT INTO consumptionEvent (deviceId, bootCounter, sequence, ticks, utcNanoseconds, uncertaintyNanoseconds, durationMilliseconds, intensity, receivedAt)
                    VALUES (1, 4, 0, 4000, 1793520004000000000, 3200000, 900, 50, 1793520010000000000),
                           (1, 4, 1, 6000, 1793520006000000000, 3200000, 1100, 60, 1793520010000000000);
                    INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, status, attempts, nextAttemptAt, createdAt, updatedAt)
                    VALUES ('0190a000-0000-7000-8000-000000000001', 'consumptionEvent', 'OLD-1/4/1', 'create', '{"serial":"OLD-1"}', 'pending', 0, 1793520010000000000, 1793520010000000000, 1793520010000000000);
                    INSERT INTO syncCursor (name, value, updatedAt) VALUES ('settings', 'etag-17', 1793520010000000000);
                    INSERT INTO deviceSettings (deviceId, conflicts, updatedAt) VALUES (1, '[]', 1793520010000000000);
                    """)
            }
        }
        let database = try GatewayDatabase(path: path)
        #expect(try database.appliedMigrations() == Self.migrations)
        #expect(try database.integrityProblems().isEmpty)
        let service = ConsumptionService(database: database)
        let seed = try service.sessionSeed(address: "AA:00:00:00:00:01")
        #expect(seed?.history.isStored(EventKey(serial: "OLD-1", bootCounter: 4, sequence: 1)) == true)
        #expect(seed?.clock.hasAnchor(boot: 4) == true)
        #expect(try Outbox(database: database).counts().pending == 1)
        #expect(try SyncCursors(database: database).value("settings") == "etag-17")
        // v3: a settings row from before has no server base yet.
        let settings = try #require(try DeviceSettingsService(database: database).settings(serial: "OLD-1"))
        #expect(settings.serverVersion == nil && settings.serverSettings == nil)
        // The command queued before v2 is found through v2's ready index.
        var random = SplitMix64(seed: 1)
        let claimed = try Outbox(database: database).claim(limit: 10, now: Timestamp(nanoseconds: 1793520010000000000), using: &random)
        #expect(claimed.map(\.command.entityId) == ["OLD-1/4/1"])
        // v4: every device row has its peripheral row, linked, with a gateway-assigned uid; one without an address too.
        let peripherals = try PeripheralRegistry(database: database).peripherals()
        #expect(peripherals.map(\.linkDeviceId) == [1, 2])
        #expect(peripherals.map(\.identityAddress) == ["AA:00:00:00:00:01", nil])
        #expect(peripherals.allSatisfy { $0.kinds == [.tetherLink] && $0.uid.count == 36 })
        #expect(Set(peripherals.map(\.uid)).count == 2)
        #expect(peripherals.map(\.firstSeenAt) == [1793520000000000000, 1793520100000000000])
        #expect(peripherals[0].lastSeenAt == 1793520060000000000)
        // v5: the command kept its seq through the outbox table's rebuild, and the next one comes after it.
        let commands = try Outbox(database: database).commands(for: .consumptionEvent(EventKey(serial: "OLD-1", bootCounter: 4, sequence: 1)))
        #expect(commands.map(\.seq) == [1])
        // And it keeps working: a duplicate is recognised, a new event stored.
        let outcome = try store([.hit(hit("OLD-1", boot: 4, sequence: 1)), .hit(hit("OLD-1", boot: 4, sequence: 2))], in: service)
        #expect(outcome.duplicateEvents.map(\.sequence) == [1])
        #expect(outcome.storedEvents.map(\.sequence) == [2])
    }

    /// v5 rebuilt `outboxCommand`; SQLite drops a table's AUTOINCREMENT counter with it. Commands pruned before the
    /// upgrade must not have their seq handed out again (seq is push order; the backend's logs name it).
    @Test("v8 recodes stored glucose by its specimen (160368 is UNDETERMINED_PLASMA, not the generic code), keys with it")
    func glucoseSamplesAreRecodedBySpecimen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v7.sqlite")
        let peripheral = "0190a000-0000-7000-8000-0000000000aa"
        let glucose = "00002a18-0000-1000-8000-00805f9b34fb"
        // GLS §3.106 records by hand: flags 0x02 (concentration, type-sample location), sequence, base time, SFLOAT,
        // then the type in the low nibble of the last byte; the second also has a time offset (flags bit 0).
        let capillaryWholeBlood: [UInt8] = [0x02, 1, 0, 0xEA, 0x07, 1, 2, 3, 4, 5, 0x50, 0xB0, 0x11]
        let venousPlasmaWithOffset: [UInt8] = [0x03, 2, 0, 0xEA, 0x07, 1, 2, 3, 4, 5, 0xFB, 0xFF, 0x50, 0xB0, 0x14]
        let noType: [UInt8] = [0x00, 3, 0, 0xEA, 0x07, 1, 2, 3, 4, 5]
        // As v7 wrote them (the device by its registry uid); after v11, by its identity address.
        func key(_ sequence: Int, _ code: Int, device: String = peripheral) -> String { "seq/\(device)/\(glucose)/-/\(code)/0/0/\(sequence)" }
        do {
            let queue = try DatabaseQueue(path: path)
            try Migrations.migrator.migrate(queue, upTo: "v7-peripheral-adopted")
            try queue.write { db in
                try db.execute(sql: """
                    INSERT INTO peripheral (uid, identityAddress, firstSeenAt, lastSeenAt) VALUES (?, 'C0:54:45:00:00:01', 0, 0)
                    """, arguments: [peripheral])
                func insert(_ n: Int, code: Int, key: String, raw: [UInt8]?) throws {
                    try db.execute(sql: """
                        INSERT INTO healthSample (uid, dedupKey, peripheralId, characteristic, metricCode, valueStatus,
                            reportedMantissa, reportedExponent, reportedUnit, canonicalValue, canonicalUnit, effectiveAt,
                            timeBasis, epoch, lane, rawBytes, parserVersion, receivedAt)
                        VALUES (?, ?, 1, ?, ?, 'number', 80, -5, 'kg/L', '80', 'mg/dL', 0, 'receipt', 0, ?, ?, ?, 0)
                        """, arguments: ["0190a000-0000-7000-8000-00000000000\(n)", key, glucose, code,
                                         raw == nil ? "change" : "cold", raw.map { Data($0) }, raw == nil ? nil : 1])
                }
                try insert(1, code: 160_368, key: key(1, 160_368), raw: capillaryWholeBlood)
                try insert(2, code: 160_368, key: key(2, 160_368), raw: venousPlasmaWithOffset)
                try insert(3, code: 160_368, key: key(3, 160_368), raw: noType)
                try insert(4, code: 160_369, key: key(1, 160_369), raw: capillaryWholeBlood)  // another metric: untouched
                // A correction of sample 1 (no raw bytes; keyed by the sample it replaces).
                try insert(5, code: 160_368, key: "correction/0190a000-0000-7000-8000-000000000001", raw: nil)
                try db.execute(sql: """
                    INSERT INTO healthDeletion (uid, sampleId, reason, requestedBy, replacementSampleId, requestedAt)
                    VALUES ('0190a000-0000-7000-8000-0000000000d1', 1, 'correction', 'technician', 5, 0)
                    """)
            }
        }
        let database = try GatewayDatabase(path: path)
        let rows = try database.read { db in
            try Row.fetchAll(db, sql: "SELECT metricCode, dedupKey FROM healthSample ORDER BY id").map { ($0["metricCode"] as Int, $0["dedupKey"] as String) }
        }
        #expect(rows.map(\.0) == [160_184, 160_196, 160_020, 160_369, 160_184])
        let address = "C0:54:45:00:00:01"
        #expect(rows.map(\.1) == [
            key(1, 160_184, device: address), key(2, 160_196, device: address), key(3, 160_020, device: address), key(1, 160_369, device: address),
            "correction/0190a000-0000-7000-8000-000000000001",
        ])
    }

    /// A gateway that lost its database registers the device under a new uid: only keys that name the device by
    /// its identity address let the backend know the records it reads again (`HealthDedupKey`).
    @Test("v11 names the device in stored dedup keys by its identity address; corrections and keys naming another device keep theirs")
    func dedupKeysNameTheDeviceByAddress() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v10.sqlite")
        let (first, second) = ("0190a000-0000-7000-8000-0000000000aa", "0190a000-0000-7000-8000-0000000000bb")
        let cuff = "00002a35-0000-1000-8000-00805f9b34fb"
        let written = [
            (1, "seq/\(first)/\(cuff)/1/150021/0/0/7"),
            (1, "time/\(first)/\(cuff)/-/150021/0/0123456789abcdef/2026-11-20T08:00:00/with/slashes"),
            (1, "receipt/\(first)/\(cuff)/-/149546/0/0123456789abcdef/1795000000000000000"),
            (1, "correction/0190a000-0000-7000-8000-000000000001"),
            (1, "seq/\(second)/\(cuff)/-/150021/0/0/7"),  // names another peripheral than its row's: not v11's to change
            (2, "seq/\(second)/\(cuff)/-/150021/0/0/8"),
        ]
        do {
            let queue = try DatabaseQueue(path: path)
            try Migrations.migrator.migrate(queue, upTo: "v10-health-projections")
            try queue.write { db in
                try db.execute(sql: "INSERT INTO peripheral (uid, identityAddress, firstSeenAt, lastSeenAt) VALUES (?, 'c0:54:45:00:00:0a', 0, 0)", arguments: [first])
                try db.execute(sql: "INSERT INTO peripheral (uid, identityAddress, firstSeenAt, lastSeenAt) VALUES (?, 'C0:54:45:00:00:0B', 0, 0)", arguments: [second])
                for (index, (peripheralId, key)) in written.enumerated() {
                    try db.execute(sql: """
                        INSERT INTO healthSample (uid, dedupKey, peripheralId, characteristic, metricCode, valueStatus,
                            reportedMantissa, reportedExponent, reportedUnit, canonicalValue, canonicalUnit, effectiveAt,
                            timeBasis, epoch, lane, rawBytes, parserVersion, receivedAt)
                        VALUES (?, ?, ?, ?, 150021, 'number', 120, 0, 'mm[Hg]', '120', 'mm[Hg]', 0, 'receipt', 0, 'hot', X'00', 1, 0)
                        """, arguments: ["0190a000-0000-7000-8000-00000000001\(index)", key, peripheralId, cuff])
                }
            }
        }
        let keys = try GatewayDatabase(path: path).read { db in try String.fetchAll(db, sql: "SELECT dedupKey FROM healthSample ORDER BY id") }
        #expect(keys == [
            "seq/C0:54:45:00:00:0A/\(cuff)/1/150021/0/0/7",
            "time/C0:54:45:00:00:0A/\(cuff)/-/150021/0/0123456789abcdef/2026-11-20T08:00:00/with/slashes",
            "receipt/C0:54:45:00:00:0A/\(cuff)/-/149546/0/0123456789abcdef/1795000000000000000",
            "correction/0190a000-0000-7000-8000-000000000001",
            "seq/\(second)/\(cuff)/-/150021/0/0/7",
            "seq/C0:54:45:00:00:0B/\(cuff)/-/150021/0/0/8",
        ])
    }

    @Test("v5 carries the outbox's seq counter over, even when every command had been pruned")
    func outboxSequenceSurvivesTheRebuild() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v4.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try Migrations.migrator.migrate(queue, upTo: "v4-peripheral-registry")
            try queue.write { db in
                for n in 1...7 {
                    try db.execute(sql: """
                        INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, nextAttemptAt, createdAt, updatedAt)
                        VALUES (?, 'device', ?, 'create', '{}', 0, 0, 0)
                        """, arguments: ["0190a000-0000-7000-8000-00000000000\(n)", "D\(n)"])
                }
                try db.execute(sql: "DELETE FROM outboxCommand")
            }
        }
        let database = try GatewayDatabase(path: path)
        let seq = try database.read { db in try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outboxCommand'") }
        #expect(seq == 7)
        let next = try database.write { db in
            try db.execute(sql: """
                INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, nextAttemptAt, createdAt, updatedAt)
                VALUES ('0190a000-0000-7000-8000-000000000008', 'device', 'D8', 'create', '{}', 0, 0, 0)
                """)
            return db.lastInsertedRowID
        }
        #expect(next == 8)
    }

    /// A gateway upgraded to v7 keeps wanting the Tether devices it had paired: their peripherals are adopted by
    /// the migration; an unpaired device's is not, nor a peripheral without a device (v6 recorded no pairing for it).
    @Test("v7 adopts the peripherals of paired devices, and only those")
    func adoptionIsCarriedOver() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v6.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try Migrations.migrator.migrate(queue, upTo: "v6-health-tables")
            try queue.write { db in
                try db.execute(sql: """
                    INSERT INTO device (id, serial, address, pairingState, firstSeenAt, lastSeenAt)
                    VALUES (1, 'PAIRED', 'AA:00:00:00:00:01', 'paired', 100, 200),
                           (2, 'GONE', 'AA:00:00:00:00:02', 'unpaired', 300, 400);
                    INSERT INTO peripheral (uid, identityAddress, kinds, linkDeviceId, firstSeenAt, lastSeenAt)
                    VALUES ('0190a000-0000-7000-8000-000000000001', 'AA:00:00:00:00:01', '["tether-link"]', 1, 100, 200),
                           ('0190a000-0000-7000-8000-000000000002', 'AA:00:00:00:00:02', '["tether-link"]', 2, 300, 400),
                           ('0190a000-0000-7000-8000-000000000003', 'AA:00:00:00:00:03', '["health"]', NULL, 500, 600);
                    """)
            }
        }
        let registry = PeripheralRegistry(database: try GatewayDatabase(path: path))
        #expect(try registry.adoptedAddresses() == ["AA:00:00:00:00:01"])
        #expect(try registry.peripheral(identityAddress: "AA:00:00:00:00:01")?.adoptedAt == 100)
        // Adopting again keeps the first instant; forgetting clears it; forgetting an unknown address adds no row.
        var random = SystemRandomNumberGenerator()
        try registry.setAdopted(true, identityAddress: "AA:00:00:00:00:03", at: Timestamp(nanoseconds: 700), using: &random)
        try registry.setAdopted(true, identityAddress: "AA:00:00:00:00:03", at: Timestamp(nanoseconds: 900), using: &random)
        #expect(try registry.peripheral(identityAddress: "AA:00:00:00:00:03")?.adoptedAt == 700)
        try registry.setAdopted(false, identityAddress: "AA:00:00:00:00:01", at: Timestamp(nanoseconds: 800), using: &random)
        try registry.setAdopted(false, identityAddress: "AA:00:00:00:00:09", at: Timestamp(nanoseconds: 800), using: &random)
        #expect(try registry.adoptedAddresses() == ["AA:00:00:00:00:03"])
        #expect(try registry.peripherals().count == 3)
    }

    /// A kind of outbox entity is a case of `OutboxEntity.Kind` and a row of `outboxEntityType`: a case without its
    /// row could never be enqueued (the foreign key refuses it), and a row without its case could never be read.
    @Test("every kind of outbox entity has its row in outboxEntityType, and nothing else does")
    func outboxEntityTypesMatchTheKinds() throws {
        let database = try GatewayDatabase.inMemory()
        let names = try database.read { db in try String.fetchAll(db, sql: "SELECT name FROM outboxEntityType ORDER BY name") }
        #expect(names == OutboxEntity.Kind.allCases.map(\.rawValue).sorted())
    }

    @Test("a read-only opening (the CLI) reads a migrated database and refuses an unmigrated one")
    func readOnly() throws {
        let directory = try TemporaryDirectory()
        var readOnly = GatewayDatabase.Configuration()
        readOnly.readOnly = true
        let empty = directory.file("empty.sqlite")
        _ = try DatabaseQueue(path: empty)
        #expect(throws: StoreError(.invalidRequest, "")) { try GatewayDatabase(path: empty, configuration: readOnly) }

        let path = directory.file("live.sqlite")
        try store([.hit(hit("RO", sequence: 0))], in: ConsumptionService(database: try GatewayDatabase(path: path)))
        let reader = try GatewayDatabase(path: path, configuration: readOnly)
        #expect(try ConsumptionService(database: reader).eventCount() == 1)
        #expect(try Outbox(database: reader).counts().pending == 2)
    }

    @Test("the constraints refuse bad rows whatever code writes them")
    func constraints() throws {
        let database = try GatewayDatabase.inMemory()
        let statements = [
            "INSERT INTO device (serial, firstSeenAt, lastSeenAt) VALUES ('', 1, 1)",
            "INSERT INTO device (serial, firstSeenAt, lastSeenAt, pairingState) VALUES ('X', 1, 1, 'married')",
            "INSERT INTO device (serial, firstSeenAt, lastSeenAt) VALUES ('X', 2, 1)",
            "INSERT INTO boot (deviceId, bootCounter, firstSeenAt) VALUES (999, 1, 1)",
            "INSERT INTO consumptionEvent (deviceId, bootCounter, sequence, ticks, durationMilliseconds, intensity, receivedAt) VALUES (1, 1, 0, 0, 0, 101, 0)",
            "INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, nextAttemptAt, createdAt, updatedAt) VALUES ('short', 'device', 'X', 'create', '{}', 0, 0, 0)",
            "INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, nextAttemptAt, createdAt, updatedAt) VALUES ('0190a000-0000-7000-8000-000000000003', 'sample', 'X', 'create', '{}', 0, 0, 0)",
            "INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, nextAttemptAt, createdAt, updatedAt) VALUES ('0190a000-0000-7000-8000-000000000001', 'device', 'X', 'create', 'not json', 0, 0, 0)",
            "INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, status, nextAttemptAt, createdAt, updatedAt) VALUES ('0190a000-0000-7000-8000-000000000002', 'device', 'X', 'create', '{}', 'in_progress', 0, 0, 0)",
        ]
        for sql in statements {
            #expect(throws: StoreError.self, "\(sql)") { try database.write { db in try db.execute(sql: sql) } }
        }
    }
}
