import Foundation
import GRDB
import LinkProtocol
import TetherPrimitives

/// What storing one `PersistBatch` did. The session learns only "stored" or "not stored"; this is for logs,
/// metrics, replays and the daemon's settings flow.
public struct BatchOutcome: Hashable, Sendable {
    public var batch: PersistBatch.ID
    /// Events stored by this batch, each with its outbox create command.
    public var storedEvents: [EventKey] = []
    /// Events already stored (a retransmission the session's cache did not know of, or a replay): ACKed again,
    /// stored once (§8.8).
    public var duplicateEvents: [EventKey] = []
    /// Events whose UTC a new anchor improved (each with an update command, coalesced when possible) (§9.7).
    public var retimedEvents = 0
    public var anchorsStored = 0
    public var telemetryStored = 0
    /// Set when the batch carried the device's CONFIG_DATA and desired settings are still unconfirmed: the merged
    /// desired config to hand to `LinkSession.desiredConfigChanged` (§7.11).
    public var configToApply: DeviceConfig?

    public init(batch: PersistBatch.ID) { self.batch = batch }
}

/// What a restarted gateway gives a new `LinkSession` for a device: its dedup history (§8.8, §8.9) and clock
/// anchors (§9), rebuilt from the tables. Pass `desiredConfig: nil` to the session and send desired settings only
/// once the device's report has been merged (`BatchOutcome.configToApply`).
public struct SessionSeed: Hashable, Sendable {
    public var history: DeviceHistory
    public var clock: DeviceClock

    public init(history: DeviceHistory, clock: DeviceClock) {
        self.history = history
        self.clock = clock
    }
}

/// Failure points tests inject between the writes of one transaction.
struct StoreFaults: Sendable {
    /// Runs after an entity row is written and before its outbox command; a throw must leave neither.
    var afterEntityWrite: (@Sendable (OutboxEntity) throws -> Void)?
}

/// Stores what the link session hands over: every `PersistItem` of a batch, with the outbox commands that tell
/// the backend, in the caller's one transaction.
///
/// Events are inserted with `ON CONFLICT DO NOTHING` on UNIQUE(device, boot, sequence): the table, not the
/// session's cache, decides what is a duplicate. Anchors re-derive the UTC of their boot's events (§9.7).
public struct ConsumptionService: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// A re-derived event time is written, and an update queued, only when its UTC or its uncertainty moves
        /// by at least this much: a new anchor moves every estimate a little, and the backend needs only real
        /// improvements.
        public var retimeThreshold: Duration = .milliseconds(1)
        /// How many of a device's most recent boots a session seed restores.
        public var bootsToRestore = 8

        public init() {}
    }

    public let database: GatewayDatabase
    public let configuration: Configuration
    var faults = StoreFaults()

    public init(database: GatewayDatabase, configuration: Configuration = Configuration()) {
        self.database = database
        self.configuration = configuration
    }

    // MARK: - Writing

    /// Stores one batch in its own durable transaction (replays, tests). The daemon goes through
    /// `GroupCommitter`, which puts the batches of every device into one transaction.
    public func apply(_ batch: PersistBatch, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> BatchOutcome {
        let seed = random.next()
        let storageGuard = StorageGuard(database: database)
        return try database.write { db in
            try storageGuard.check(db)
            var context = WriteContext(now: now, seed: seed)
            return try apply(batch, in: db, context: &context)
        }
    }

    func apply(_ batch: PersistBatch, in db: Database, context: inout WriteContext) throws -> BatchOutcome {
        var outcome = BatchOutcome(batch: batch.id)
        for item in batch.items {
            switch item {
            case .deviceInfo(let info, let negotiatedVersion):
                try storeDeviceInfo(info, negotiatedVersion: negotiatedVersion, in: db, context: &context)
            case .hit(let hit):
                try storeHit(hit, in: db, context: &context, outcome: &outcome)
            case .battery(let serial, let status, let receivedAt):
                let deviceId = try context.deviceID(db, serial: serial)
                try storeTelemetry(DeviceTelemetryRecord(deviceId: deviceId, battery: status, receivedAt: receivedAt.nanoseconds), serial: serial, in: db, context: &context, outcome: &outcome)
            case .sleep(let serial, let notice, let receivedAt):
                let deviceId = try context.deviceID(db, serial: serial)
                try storeTelemetry(DeviceTelemetryRecord(deviceId: deviceId, sleep: notice, receivedAt: receivedAt.nanoseconds), serial: serial, in: db, context: &context, outcome: &outcome)
            case .reportedConfig(let serial, let config):
                let device = try context.device(db, serial: serial)
                outcome.configToApply = try DeviceSettingsService.applyReported(config, device: device, in: db, context: &context)
            case .anchor(let serial, let anchor):
                try storeAnchor(anchor, serial: serial, in: db, context: &context, outcome: &outcome)
            }
        }
        return outcome
    }

    /// DEVICE_INFO (§7.2): the device's identity. The backend hears of a new device and of changed identity
    /// fields; `lastSeenAt` and the latest boot are local bookkeeping.
    private func storeDeviceInfo(_ info: DeviceInfo, negotiatedVersion: UInt8, in db: Database, context: inout WriteContext) throws {
        let now = context.now.nanoseconds
        var device: DeviceRecord
        if let existing = try DeviceRecord.filter(DeviceRecord.Columns.serial == info.serial).fetchOne(db) {
            device = existing
            device.hardwareRevision = info.hardwareRevision
            device.firmwareVersion = info.firmware.description
            device.protocolVersion = negotiatedVersion
            device.capabilities = info.capabilities.rawValue
            device.lastSeenAt = max(existing.lastSeenAt, now)
            if WriteContext.isLater(info.bootCounter, than: existing.latestBoot) { device.latestBoot = info.bootCounter }
            if device != existing {
                try device.update(db)
                if OutboxPayloads.device(device) != OutboxPayloads.device(existing) {
                    try faults.afterEntityWrite?(.device(serial: info.serial))
                    try Outbox.enqueue(db, entity: .device(serial: info.serial), operation: .update, payload: OutboxPayloads.device(device), now: context.now, id: context.nextCommandID())
                }
            }
        } else {
            device = DeviceRecord(
                serial: info.serial, hardwareRevision: info.hardwareRevision, firmwareVersion: info.firmware.description,
                protocolVersion: negotiatedVersion, capabilities: info.capabilities.rawValue, latestBoot: info.bootCounter,
                firstSeenAt: now, lastSeenAt: now)
            try device.insert(db)
            try faults.afterEntityWrite?(.device(serial: info.serial))
            try Outbox.enqueueCreateOfNewEntity(db, entity: .device(serial: info.serial), payload: OutboxPayloads.device(device), context: &context)
        }
        context.remember(device)
        _ = try context.boot(db, serial: info.serial, bootCounter: info.bootCounter)
    }

    /// HIT_EVENT (§8): stored once, with its create command, or recognised as a duplicate.
    private func storeHit(_ hit: StoredHit, in db: Database, context: inout WriteContext, outcome: inout BatchOutcome) throws {
        let key = hit.key
        let deviceId = try context.deviceID(db, serial: key.serial)
        let boot = try context.boot(db, serial: key.serial, bootCounter: key.bootCounter)
        guard !boot.wasPruned(key.sequence) else {
            outcome.duplicateEvents.append(key)
            return
        }
        // The session derives the time from its clock; a session restored without this boot's anchors leaves it
        // to the store's (§9.7).
        let time = try hit.time ?? context.clock(db, deviceId: deviceId, bootCounter: key.bootCounter)?.estimate(ticks: hit.ticks)
        try context.statement(db, .insertEvent).execute(arguments: [
            deviceId, key.bootCounter, key.sequence, hit.ticks, time?.utcNanoseconds, time?.uncertaintyNanoseconds,
            hit.durationMilliseconds, hit.intensity, hit.receivedAt.nanoseconds,
        ])
        guard db.changesCount == 1 else {
            outcome.duplicateEvents.append(key)
            return
        }
        try faults.afterEntityWrite?(.consumptionEvent(key))
        let payload = OutboxPayloads.event(key, ticks: hit.ticks, time: time, durationMilliseconds: hit.durationMilliseconds, intensity: hit.intensity, receivedAt: hit.receivedAt.nanoseconds)
        try Outbox.enqueueCreateOfNewEntity(db, entity: .consumptionEvent(key), payload: payload, context: &context)
        outcome.storedEvents.append(key)
    }

    /// BATTERY_STATUS and SLEEP: unique by (device, kind, receivedAt), so a replay adds nothing.
    private func storeTelemetry(_ record: DeviceTelemetryRecord, serial: String, in db: Database, context: inout WriteContext, outcome: inout BatchOutcome) throws {
        try context.statement(db, .insertTelemetry).execute(arguments: [
            record.deviceId, record.kind.rawValue, record.receivedAt, record.batteryMillivolts, record.batteryPercent,
            record.isCharging, record.sleepReason, record.wakeAfterSeconds,
        ])
        guard db.changesCount == 1 else { return }
        let entity = OutboxEntity.telemetry(serial: serial, kind: record.kind, receivedAt: record.receivedAt)
        try faults.afterEntityWrite?(entity)
        try Outbox.enqueueCreateOfNewEntity(db, entity: entity, payload: OutboxPayloads.telemetry(serial: serial, record), context: &context)
        outcome.telemetryStored += 1
    }

    /// A new anchor (§9.2): saved, then every event of its boot gets its time derived again from the boot's
    /// anchors (§9.7). An event whose estimate moved by at least `retimeThreshold` is updated and its update
    /// command queued; a create still waiting in the outbox absorbs it.
    private func storeAnchor(_ anchor: TimeAnchor, serial: String, in db: Database, context: inout WriteContext, outcome: inout BatchOutcome) throws {
        let deviceId = try context.deviceID(db, serial: serial)
        _ = try context.boot(db, serial: serial, bootCounter: anchor.bootCounter)
        try db.execute(sql: """
            INSERT INTO timeAnchor (deviceId, bootCounter, deviceMicroseconds, gatewayNanoseconds, uncertaintyNanoseconds, roundTripNanoseconds)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (deviceId, bootCounter, deviceMicroseconds, gatewayNanoseconds) DO NOTHING
            """, arguments: [deviceId, anchor.bootCounter, anchor.deviceMicroseconds, anchor.gatewayNanoseconds, anchor.uncertaintyNanoseconds, anchor.roundTripNanoseconds])
        guard db.changesCount == 1 else { return }  // the same anchor again (a replay): nothing changes
        outcome.anchorsStored += 1
        context.forgetClock(deviceId: deviceId, bootCounter: anchor.bootCounter)
        guard let clock = try context.clock(db, deviceId: deviceId, bootCounter: anchor.bootCounter) else { return }

        let threshold = configuration.retimeThreshold.nanoseconds
        let events = try ConsumptionEventRecord
            .filter(ConsumptionEventRecord.Columns.deviceId == deviceId && ConsumptionEventRecord.Columns.bootCounter == anchor.bootCounter)
            .fetchAll(db)
        for var event in events {
            guard let estimate = clock.estimate(ticks: event.ticks) else { continue }
            if let old = event.time,
                abs(old.utcNanoseconds - estimate.utcNanoseconds) < threshold,
                abs(old.uncertaintyNanoseconds - estimate.uncertaintyNanoseconds) < threshold
            {
                continue
            }
            event.utcNanoseconds = estimate.utcNanoseconds
            event.uncertaintyNanoseconds = estimate.uncertaintyNanoseconds
            try event.update(db, columns: [ConsumptionEventRecord.Columns.utcNanoseconds, ConsumptionEventRecord.Columns.uncertaintyNanoseconds])
            let key = EventKey(serial: serial, bootCounter: event.bootCounter, sequence: event.sequence)
            try faults.afterEntityWrite?(.consumptionEvent(key))
            let payload = OutboxPayloads.event(key, ticks: event.ticks, time: estimate, durationMilliseconds: event.durationMilliseconds, intensity: event.intensity, receivedAt: event.receivedAt)
            try Outbox.enqueue(db, entity: .consumptionEvent(key), operation: .update, payload: payload, now: context.now, id: context.nextCommandID())
            outcome.retimedEvents += 1
        }
    }

    // MARK: - Reading

    /// The stored row of one event, `nil` if it is not stored.
    public func event(_ key: EventKey) throws(StoreError) -> ConsumptionEventRecord? {
        try database.read { db in
            try ConsumptionEventRecord.fetchOne(db, sql: """
                SELECT consumptionEvent.* FROM consumptionEvent JOIN device ON device.id = consumptionEvent.deviceId
                WHERE device.serial = ? AND consumptionEvent.bootCounter = ? AND consumptionEvent.sequence = ?
                """, arguments: [key.serial, key.bootCounter, key.sequence])
        }
    }

    /// How many events are stored, in all or for one device.
    public func eventCount(serial: String? = nil) throws(StoreError) -> Int {
        try database.read { db in
            guard let serial else { return try ConsumptionEventRecord.fetchCount(db) }
            return try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM consumptionEvent JOIN device ON device.id = consumptionEvent.deviceId WHERE device.serial = ?
                """, arguments: [serial]) ?? 0
        }
    }

    // MARK: - Restoring a session

    /// The dedup history and clock of a device, from the tables. A device never seen gets empty ones.
    public func sessionSeed(serial: String) throws(StoreError) -> SessionSeed {
        let bootsToRestore = configuration.bootsToRestore
        return try database.read { db in
            guard let device = try DeviceRecord.filter(DeviceRecord.Columns.serial == serial).fetchOne(db) else {
                return SessionSeed(history: DeviceHistory(serial: serial), clock: DeviceClock())
            }
            return try Self.seed(db, device: device, bootsToRestore: bootsToRestore)
        }
    }

    /// The seed of the device last seen at a BLE address, `nil` when the address is unknown (a new device: start
    /// with an empty session; its DEVICE_INFO names it).
    public func sessionSeed(address: String) throws(StoreError) -> SessionSeed? {
        let bootsToRestore = configuration.bootsToRestore
        return try database.read { db in
            guard let device = try DeviceRecord.filter(DeviceRecord.Columns.address == address).fetchOne(db) else { return nil }
            return try Self.seed(db, device: device, bootsToRestore: bootsToRestore)
        }
    }

    private static func seed(_ db: Database, device: DeviceRecord, bootsToRestore: Int) throws -> SessionSeed {
        var history = DeviceHistory(serial: device.serial)
        history.latestBoot = device.latestBoot
        var clock = DeviceClock()
        guard let deviceId = device.id else { return SessionSeed(history: history, clock: clock) }
        let boots = try BootRecord
            .filter(BootRecord.Columns.deviceId == deviceId)
            .order(BootRecord.Columns.id.desc)
            .limit(bootsToRestore)
            .fetchAll(db)
        for boot in boots {
            history.boots[boot.bootCounter] = try bootHistory(db, boot)
            let bootClock = try WriteContext.loadClock(db, deviceId: deviceId, bootCounter: boot.bootCounter)
            for anchor in bootClock.anchors { clock.add(anchor) }
        }
        return SessionSeed(history: history, clock: clock)
    }

    /// §8.8, §8.9, §9.8 for one boot: which sequences are stored, and the highest sequence and tick seen.
    private static func bootHistory(_ db: Database, _ boot: BootRecord) throws -> DeviceHistory.BootHistory {
        var history = DeviceHistory.BootHistory()
        // Below the first gap retention left, everything pruned was stored.
        history.storedThrough = boot.prunedGaps.map { $0.from - 1 }.min() ?? boot.prunedThroughSequence
        let arguments: StatementArguments = [boot.deviceId, boot.bootCounter, history.storedThrough]
        let summary = try Row.fetchOne(db, sql: """
            SELECT COUNT(*) AS count, MIN(sequence) AS low, MAX(sequence) AS high
            FROM consumptionEvent WHERE deviceId = ? AND bootCounter = ? AND sequence > ?
            """, arguments: arguments)
        let count: Int = summary?["count"] ?? 0
        if count > 0, let low: Int64 = summary?["low"], let high: Int64 = summary?["high"] {
            if low == history.storedThrough + 1 && high - low + 1 == Int64(count) {
                history.storedThrough = high  // contiguous: the common case
            } else {
                let sequences = try Int64.fetchCursor(db, sql: """
                    SELECT sequence FROM consumptionEvent WHERE deviceId = ? AND bootCounter = ? AND sequence > ? ORDER BY sequence
                    """, arguments: arguments)
                while let sequence = try sequences.next() { history.markStored(sequence) }
            }
        }
        let maximumSequence = try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM consumptionEvent WHERE deviceId = ? AND bootCounter = ?", arguments: [boot.deviceId, boot.bootCounter])
        history.highestSequence = max(maximumSequence ?? 0, boot.prunedThroughSequence, 0)
        let eventTicks = try Int64.fetchOne(db, sql: "SELECT MAX(ticks) FROM consumptionEvent WHERE deviceId = ? AND bootCounter = ?", arguments: [boot.deviceId, boot.bootCounter])
        let anchorMicroseconds = try Int64.fetchOne(db, sql: "SELECT MAX(deviceMicroseconds) FROM timeAnchor WHERE deviceId = ? AND bootCounter = ?", arguments: [boot.deviceId, boot.bootCounter])
        history.highestTicks = max(eventTicks ?? 0, (anchorMicroseconds ?? 0) / 1000)
        return history
    }
}
