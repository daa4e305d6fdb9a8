import GRDB
import LinkProtocol
import TetherPrimitives
import TetherSettings

/// Desired settings (from the backend or a technician) against reported ones (the device's CONFIG_DATA), with
/// versions and a three-way merge against the last synced base (§7.11, docs/design/store.md "Device settings").
///
/// The flow on a connection: the session asks GET_CONFIG; the device's CONFIG_DATA is stored by
/// `ConsumptionService`, which merges it here and returns the desired config still to apply
/// (`BatchOutcome.configToApply`); the daemon hands that to `LinkSession.desiredConfigChanged`, which sends
/// SET_CONFIG; the device's next CONFIG_DATA reports the desired version, which confirms it and makes it the new
/// base. Sending only after the report is merged is what keeps a change made on the device since the last sync
/// from being overwritten blindly.
public struct DeviceSettingsService: Sendable {
    public let database: GatewayDatabase

    public init(database: GatewayDatabase) { self.database = database }

    /// The result of a change: the row, and the config to send now if the device is connected.
    public struct Change: Hashable, Sendable {
        public var record: DeviceSettingsRecord
        /// Unconfirmed desired settings to send with SET_CONFIG, once the device has reported at least once.
        public var configToApply: DeviceConfig?
    }

    public enum ConflictChoice: Hashable, Sendable {
        /// Apply the desired value to the device.
        case desired
        /// Keep the device's value and drop the desired one.
        case reported
    }

    public func settings(serial: String) throws(StoreError) -> DeviceSettingsRecord? {
        try database.read { db in
            guard let deviceId = try Int64.fetchOne(db, sql: "SELECT id FROM device WHERE serial = ?", arguments: [serial]) else { return nil }
            return try DeviceSettingsRecord.fetchOne(db, key: deviceId)
        }
    }

    /// Unresolved conflicts of one device.
    public struct DeviceConflicts: Hashable, Sendable {
        public var serial: String
        public var conflicts: [SettingConflict]
    }

    /// Every device with unresolved conflicts, for the CLI and status.
    public func conflicts() throws(StoreError) -> [DeviceConflicts] {
        try database.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT device.serial, deviceSettings.* FROM deviceSettings JOIN device ON device.id = deviceSettings.deviceId
                WHERE deviceSettings.conflicts <> '[]' ORDER BY device.serial
                """)
            return try rows.map { row in DeviceConflicts(serial: row["serial"], conflicts: try DeviceSettingsRecord(row: row).conflicts) }
        }
    }

    /// The backend or a technician wants `settings` on the device (an overlay: settings left unset keep their
    /// desired value). They are merged three-way with what the device reported; conflicts are recorded.
    public func changeDesired(serial: String, to settings: DeviceSettings, by author: SettingsAuthor, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> Change {
        do {
            try settings.validate()
        } catch {
            throw StoreError(.invalidRequest, "desired settings for \(serial): \(error)")
        }
        let seed = random.next()
        return try database.write { db in
            var context = WriteContext(now: now, seed: seed)
            let deviceId = try context.deviceID(db, serial: serial)
            var record = try DeviceSettingsRecord.fetchOne(db, key: deviceId) ?? DeviceSettingsRecord(deviceId: deviceId, updatedAt: now.nanoseconds)
            let wanted = (record.desiredSettings ?? DeviceSettings()).overlaid(with: settings)
            record.desiredVersion = Self.nextVersion(after: record)
            record.desiredChangedBy = author
            record.desiredChangedAt = now.nanoseconds
            try Self.merge(wanted, into: &record, at: now)
            try Self.save(record, serial: serial, in: db, context: &context)
            return Change(record: record, configToApply: Self.configToApply(record))
        }
    }

    /// Decides one conflict. Either way the device's current value becomes the base for that setting, so the
    /// merge no longer sees a change on the device's side.
    public func resolveConflict(serial: String, key: UInt8, keep choice: ConflictChoice, by author: SettingsAuthor, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> Change {
        let seed = random.next()
        return try database.write { db in
            var context = WriteContext(now: now, seed: seed)
            let deviceId = try context.deviceID(db, serial: serial)
            guard var record = try DeviceSettingsRecord.fetchOne(db, key: deviceId),
                let conflict = record.conflicts.first(where: { $0.key == key })
            else {
                throw StoreError(.notFound, "\(serial) has no settings conflict on key \(key)")
            }
            var base = record.baseSettings.map(SettingsMerge.values(of:)) ?? [:]
            base[key] = conflict.reported
            var desired = record.desiredSettings.map(SettingsMerge.values(of:)) ?? [:]
            desired[key] = choice == .desired ? conflict.desired : conflict.reported
            do {
                record.baseSettings = try SettingsMerge.settings(from: base)
                record.desiredSettings = try SettingsMerge.settings(from: desired)
            } catch {
                throw StoreError(.invalidRequest, "resolving \(conflict.name) for \(serial): \(error)")
            }
            record.baseVersion = record.baseVersion ?? record.reportedVersion ?? 0
            record.conflicts.removeAll { $0.key == key }
            record.desiredVersion = Self.nextVersion(after: record)
            record.desiredChangedBy = author
            record.desiredChangedAt = now.nanoseconds
            if let reported = record.reported, let desiredSettings = record.desiredSettings,
                SettingsMerge.isSatisfied(desiredSettings, by: reported.settings)
            {
                Self.confirm(&record, by: reported)
            }
            try Self.save(record, serial: serial, in: db, context: &context)
            return Change(record: record, configToApply: Self.configToApply(record))
        }
    }

    /// The desired config to send to a device that has reported in this connection, `nil` when there is none or
    /// it is confirmed.
    public func configToApply(serial: String) throws(StoreError) -> DeviceConfig? {
        try settings(serial: serial).flatMap(Self.configToApply)
    }

    // MARK: - Inside ConsumptionService's transaction

    /// CONFIG_DATA arrived (§7.11). Returns the desired config still to apply.
    static func applyReported(_ config: DeviceConfig, device: DeviceRecord, in db: Database, context: inout WriteContext) throws -> DeviceConfig? {
        guard let deviceId = device.id else { throw StoreError(.other, "device \(device.serial) has no row id") }
        let now = context.now
        let original = try DeviceSettingsRecord.fetchOne(db, key: deviceId)
        var record = original ?? DeviceSettingsRecord(deviceId: deviceId, updatedAt: now.nanoseconds)
        if record.reported != config {
            record.reportedVersion = config.version
            record.reportedSettings = config.settings
            record.reportedAt = now.nanoseconds
        }
        if let desired = record.desired {
            if desired.version == config.version && SettingsMerge.isSatisfied(desired.settings, by: config.settings) {
                confirm(&record, by: config)  // §7.11: the device took the version we sent
            } else {
                // Not (or no longer) what is wanted. A desired version the device reports on its own (one set
                // before it ever reported) must not read as a confirmation: move it above the device's.
                if desired.version <= config.version { record.desiredVersion = nextVersion(after: record) }
                try merge(desired.settings, into: &record, at: now)
            }
        } else {
            // Nothing is wanted: the device's settings are the truth, and the base of any later change.
            record.baseVersion = config.version
            record.baseSettings = config.settings
        }
        if record != original {
            try save(record, serial: device.serial, in: db, context: &context)
        }
        return configToApply(record)
    }

    // MARK: - Rules

    /// Merges `wanted` with the reported settings against the base; the result becomes the desired settings and
    /// new conflicts replace older ones on the same key. When the device already has everything, the desired
    /// version is confirmed at once (no SET_CONFIG needed).
    static func merge(_ wanted: DeviceSettings, into record: inout DeviceSettingsRecord, at now: Timestamp) throws {
        let outcome: SettingsMerge.Outcome
        do {
            outcome = try SettingsMerge.merge(base: record.baseSettings, desired: wanted, reported: record.reportedSettings, at: now.nanoseconds)
        } catch {
            throw StoreError(.invalidRequest, "merging settings: \(error)")
        }
        record.desiredSettings = outcome.settings
        for conflict in outcome.conflicts {
            if let index = record.conflicts.firstIndex(where: { $0.key == conflict.key }) {
                // The same disagreement seen again keeps the time it was first found.
                let known = record.conflicts[index]
                if (known.base, known.desired, known.reported) != (conflict.base, conflict.desired, conflict.reported) {
                    record.conflicts[index] = conflict
                }
            } else {
                record.conflicts.append(conflict)
            }
        }
        if let reported = record.reported, SettingsMerge.isSatisfied(outcome.settings, by: reported.settings) {
            confirm(&record, by: reported)
        }
    }

    private static func confirm(_ record: inout DeviceSettingsRecord, by reported: DeviceConfig) {
        record.desiredVersion = reported.version
        record.baseVersion = reported.version
        record.baseSettings = reported.settings
    }

    private static func configToApply(_ record: DeviceSettingsRecord) -> DeviceConfig? {
        guard record.reported != nil, !record.isConfirmed else { return nil }
        return record.desired
    }

    /// A version the device has not reported: SET_CONFIG asks the device to report it (§7.11).
    static func nextVersion(after record: DeviceSettingsRecord) -> UInt32 {
        let highest = max(record.desiredVersion ?? 0, record.reportedVersion ?? 0, record.baseVersion ?? 0)
        return highest == .max ? 1 : highest + 1
    }

    static func save(_ record: DeviceSettingsRecord, serial: String, in db: Database, context: inout WriteContext) throws {
        var record = record
        record.updatedAt = context.now.nanoseconds
        try record.upsert(db)
        try Outbox.enqueue(
            db, entity: .deviceSettings(serial: serial), operation: .update,
            payload: OutboxPayloads.settings(serial: serial, record), now: context.now, id: context.nextCommandID())
    }
}
