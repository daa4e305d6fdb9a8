import Foundation
import GRDB
import LinkProtocol
import TetherPrimitives

/// What one write transaction knows: its instant, a source of command ids, and the rows it has already looked up.
///
/// The caches make a group commit of many single-event batches cost one device and one boot look-up per device,
/// not per event. They live no longer than the transaction: a value copy taken before a savepoint is put back
/// when the savepoint rolls back, so a cache never names a row that was not committed.
///
/// Public only so that `GroupCommitWork` can name it; everything in it stays inside the store.
public struct WriteContext {
    let now: Timestamp
    private var random: SplitMix64
    private(set) var devices: [String: DeviceRecord] = [:]
    private var boots: [BootKey: BootRecord] = [:]
    private var clocks: [BootKey: BootClock] = [:]

    /// Statements of the ingest hot path, prepared once per transaction rather than looked up by their SQL text
    /// for every row.
    enum HotStatement: Hashable {
        case insertEvent, insertTelemetry, insertCommand

        var sql: String {
            switch self {
            case .insertEvent: """
                INSERT INTO consumptionEvent (deviceId, bootCounter, sequence, ticks, utcNanoseconds, uncertaintyNanoseconds, durationMilliseconds, intensity, receivedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (deviceId, bootCounter, sequence) DO NOTHING
                """
            case .insertTelemetry: """
                INSERT INTO deviceTelemetry (deviceId, kind, receivedAt, batteryMillivolts, batteryPercent, isCharging, sleepReason, wakeAfterSeconds)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (deviceId, kind, receivedAt) DO NOTHING
                """
            case .insertCommand: """
                INSERT INTO outboxCommand (id, entityType, entityId, operation, payload, status, attempts, nextAttemptAt, createdAt, updatedAt)
                VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
                """
            }
        }
    }

    private var statements: [HotStatement: Statement] = [:]

    mutating func statement(_ db: Database, _ which: HotStatement) throws -> Statement {
        if let statement = statements[which] { return statement }
        let statement = try db.cachedStatement(sql: which.sql)
        statements[which] = statement
        return statement
    }

    struct BootKey: Hashable {
        var deviceId: Int64
        var bootCounter: UInt16
    }

    init(now: Timestamp, seed: UInt64) {
        self.now = now
        self.random = SplitMix64(seed: seed)
    }

    /// A fresh UUIDv7 for an outbox command.
    mutating func nextCommandID() -> UUID { UUIDv7.make(at: now, using: &random) }

    /// The device row for `serial`, created as a placeholder when an event or anchor arrives before the device's
    /// DEVICE_INFO was stored (its create command then carries only the serial until DEVICE_INFO updates it).
    mutating func device(_ db: Database, serial: String) throws -> DeviceRecord {
        if let device = devices[serial] { return device }
        if let device = try DeviceRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM device WHERE serial = ?"), arguments: [serial]) {
            devices[serial] = device
            return device
        }
        var device = DeviceRecord(serial: serial, firstSeenAt: now.nanoseconds, lastSeenAt: now.nanoseconds)
        try device.insert(db)
        try Outbox.enqueueCreateOfNewEntity(db, entity: .device(serial: serial), payload: OutboxPayloads.device(device), context: &self)
        devices[serial] = device
        return device
    }

    mutating func deviceID(_ db: Database, serial: String) throws -> Int64 {
        guard let id = try device(db, serial: serial).id else { throw StoreError(.other, "device \(serial) has no row id") }
        return id
    }

    mutating func remember(_ device: DeviceRecord) { devices[device.serial] = device }

    /// The boot row, created on first sight. A new boot later than the device's latest becomes its latest (§9.6).
    mutating func boot(_ db: Database, serial: String, bootCounter: UInt16) throws -> BootRecord {
        let device = try device(db, serial: serial)
        guard let deviceId = device.id else { throw StoreError(.other, "device \(serial) has no row id") }
        let key = BootKey(deviceId: deviceId, bootCounter: bootCounter)
        if let boot = boots[key] { return boot }
        if let boot = try BootRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM boot WHERE deviceId = ? AND bootCounter = ?"), arguments: [deviceId, bootCounter]) {
            boots[key] = boot
            return boot
        }
        var boot = BootRecord(deviceId: deviceId, bootCounter: bootCounter, firstSeenAt: now.nanoseconds)
        try boot.insert(db)
        boots[key] = boot
        if Self.isLater(bootCounter, than: device.latestBoot) {
            var device = device
            device.latestBoot = bootCounter
            try device.update(db, columns: [DeviceRecord.Columns.latestBoot])
            devices[device.serial] = device
        }
        return boot
    }

    /// The clock of one boot as the stored anchors define it (§9.4), `nil` when the boot has no anchor.
    mutating func clock(_ db: Database, deviceId: Int64, bootCounter: UInt16) throws -> BootClock? {
        let key = BootKey(deviceId: deviceId, bootCounter: bootCounter)
        if let clock = clocks[key] { return clock.fit == nil ? nil : clock }
        let clock = try Self.loadClock(db, deviceId: deviceId, bootCounter: bootCounter)
        clocks[key] = clock
        return clock.fit == nil ? nil : clock
    }

    mutating func forgetClock(deviceId: Int64, bootCounter: UInt16) {
        clocks[BootKey(deviceId: deviceId, bootCounter: bootCounter)] = nil
    }

    /// Anchors in device-time order, so `BootClock` keeps the same first and latest anchors it kept live (§9.5).
    static func loadClock(_ db: Database, deviceId: Int64, bootCounter: UInt16) throws -> BootClock {
        var clock = BootClock(bootCounter: bootCounter)
        let anchors = try TimeAnchorRecord
            .filter(TimeAnchorRecord.Columns.deviceId == deviceId && TimeAnchorRecord.Columns.bootCounter == bootCounter)
            .order(TimeAnchorRecord.Columns.deviceMicroseconds, TimeAnchorRecord.Columns.id)
            .fetchAll(db)
        for anchor in anchors { clock.add(anchor.anchor) }
        return clock
    }

    /// §9.6: a boot counter later than the latest one (serial arithmetic, as the session compares them).
    static func isLater(_ boot: UInt16, than latest: UInt16?) -> Bool {
        guard let latest else { return true }
        return SequenceNumber(latest).distance(to: SequenceNumber(boot)) > 0
    }
}
