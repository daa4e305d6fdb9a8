import GRDB
import LinkProtocol
import TetherPrimitives
import TetherSettings

/// The server's side of a device's settings (docs/design/sync.md, "Settings"; issue 5: "409 → for device settings a
/// three-way merge"). A technician's change carries the server version its desired settings build on
/// (`DeviceSettingsRecord.serverVersion`), written in the same transaction as the change and its outbox command.
/// A pulled version does not move that base while a technician's change is unsent: the push then meets the
/// server's newer version as a 409, and `mergeServerConflict` merges three ways against the base it carried.
extension DeviceSettingsService {
    /// What a pulled server version did here.
    public enum ServerSettingsOutcome: Hashable, Sendable {
        /// The desired settings changed (and a command was queued).
        case applied
        /// The desired settings already held the server's; only the server base moved.
        case unchanged
        /// A technician's change built on an older server version is still unsent: it is left as it is, and its
        /// push carries its own base so the server answers 409 and the merge runs.
        case heldForLocalChange
    }

    /// A settings version pulled from the server: `desired` (the server's desired settings, an overlay) is merged
    /// with what the device reported and becomes the base of later changes, unless an unsent technician change
    /// builds on an older version (then nothing here changes: the caller records the server's version as theirs).
    public func applyServerSettings(
        serial: String, version: Int64, desired: DeviceSettings, by author: SettingsAuthor, at now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws(StoreError) -> ServerSettingsOutcome {
        do {
            try desired.validate()
        } catch {
            throw StoreError(.invalidRequest, "server settings for \(serial): \(error)")
        }
        let seed = random.next()
        return try database.write { db in
            var context = WriteContext(now: now, seed: seed)
            let deviceId = try context.deviceID(db, serial: serial)
            var record = try DeviceSettingsRecord.fetchOne(db, key: deviceId) ?? DeviceSettingsRecord(deviceId: deviceId, updatedAt: now.nanoseconds)
            if let known = record.serverVersion, known >= version { return .unchanged }
            if try Self.hasUnsentTechnicianChange(record, serial: serial, in: db) { return .heldForLocalChange }
            record.serverVersion = version
            record.serverSettings = desired
            if Self.holds(desired, record) {
                record.updatedAt = now.nanoseconds
                try record.upsert(db)  // only the gateway's bookkeeping moved: nothing to push
                return .unchanged
            }
            let wanted = (record.desiredSettings ?? DeviceSettings()).overlaid(with: desired)
            record.desiredVersion = Self.nextVersion(after: record)
            record.desiredChangedBy = author
            record.desiredChangedAt = now.nanoseconds
            try Self.merge(wanted, into: &record, at: now)
            try Self.save(record, serial: serial, in: db, context: &context)
            return .applied
        }
    }

    /// The server accepted a technician's change built on `basedOn` as `version` with `settings`: that version is
    /// the base of the next change. A command queued since (and never sent) built on the same base and on top
    /// of the accepted change, so its payload moves to the new base too.
    public func acceptServerVersion(serial: String, basedOn: Int64?, version: Int64, settings: DeviceSettings?, at now: Timestamp) throws(StoreError) {
        try database.write { db in
            var context = WriteContext(now: now, seed: 0)
            let deviceId = try context.deviceID(db, serial: serial)
            guard var record = try DeviceSettingsRecord.fetchOne(db, key: deviceId), record.serverVersion == basedOn else { return }
            record.serverVersion = version
            record.serverSettings = settings
            record.updatedAt = now.nanoseconds
            try record.upsert(db)
            if var last = try Outbox.commands(db, for: .deviceSettings(serial: serial)).last, last.status == .pending, last.firstAttemptAt == nil {
                last.payload = try OutboxPayloads.settings(serial: serial, record)
                last.updatedAt = now.nanoseconds
                try last.update(db)
            }
        }
    }

    /// The server answered 409 to a technician's change: merges three ways with `base` the server settings the
    /// change was based on, mine the local desired settings, theirs the server's (`serverVersion`, `server`).
    /// A setting changed on one side only takes that side's value; one changed differently on both becomes a
    /// conflict (desired: the technician's value, reported: the server's), and the server's value is kept until
    /// someone resolves it, so neither is lost. The result is queued as a technician change on the server's
    /// version. Returns the new conflicts.
    @discardableResult
    public func mergeServerConflict(
        serial: String, base: DeviceSettings?, serverVersion: Int64, server: DeviceSettings?, at now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws(StoreError) -> [SettingConflict] {
        let seed = random.next()
        return try database.write { db in
            var context = WriteContext(now: now, seed: seed)
            let deviceId = try context.deviceID(db, serial: serial)
            guard var record = try DeviceSettingsRecord.fetchOne(db, key: deviceId) else {
                throw StoreError(.notFound, "\(serial) has no settings to merge with the server's")
            }
            let outcome = Self.serverMerge(
                base: base.map(SettingsMerge.values(of:)) ?? [:], mine: record.desiredSettings.map(SettingsMerge.values(of:)) ?? [:],
                theirs: server.map(SettingsMerge.values(of:)) ?? [:], at: now.nanoseconds)
            let merged: DeviceSettings
            do {
                merged = try SettingsMerge.settings(from: outcome.values)
            } catch {
                throw StoreError(.invalidRequest, "merging the server's settings for \(serial): \(error)")
            }
            record.serverVersion = serverVersion
            record.serverSettings = server
            record.desiredVersion = Self.nextVersion(after: record)
            record.desiredChangedBy = .technician
            record.desiredChangedAt = now.nanoseconds
            try Self.merge(merged, into: &record, at: now)
            for conflict in outcome.conflicts {
                record.conflicts.removeAll { $0.key == conflict.key }
                record.conflicts.append(conflict)
            }
            try Self.save(record, serial: serial, in: db, context: &context)
            return outcome.conflicts
        }
    }

    /// Per setting, with `b` base, `m` mine, `t` theirs: `m == t` → `m`; `m == b` → `t`; `t == b` → `m`;
    /// otherwise a conflict keeping `t`.
    static func serverMerge(base: [UInt8: [UInt8]], mine: [UInt8: [UInt8]], theirs: [UInt8: [UInt8]], at now: Int64) -> (values: [UInt8: [UInt8]], conflicts: [SettingConflict]) {
        var values: [UInt8: [UInt8]] = [:]
        var conflicts: [SettingConflict] = []
        for key in Set(mine.keys).union(theirs.keys).sorted() {
            let (b, m, t) = (base[key], mine[key], theirs[key])
            let value: [UInt8]?
            if m == t || t == b {
                value = m
            } else if m == b {
                value = t
            } else {
                value = t
                conflicts.append(SettingConflict(key: key, base: b, desired: m, reported: t, detectedAt: now))
            }
            values[key] = value
        }
        return (values, conflicts)
    }

    /// Whether the outbox still holds a technician's change that has not reached the server (dead letters never will).
    private static func hasUnsentTechnicianChange(_ record: DeviceSettingsRecord, serial: String, in db: Database) throws -> Bool {
        guard record.desiredChangedBy == .technician else { return false }
        return try Outbox.commands(db, for: .deviceSettings(serial: serial)).contains { $0.status != .deadLetter }
    }

    /// Every setting of `desired` is already desired here, or held back by a conflict on exactly that value.
    static func holds(_ desired: DeviceSettings, _ record: DeviceSettingsRecord) -> Bool {
        let have = record.desiredSettings.map(SettingsMerge.values(of:)) ?? [:]
        return SettingsMerge.values(of: desired).allSatisfy { key, value in
            have[key] == value || record.conflicts.contains { $0.key == key && $0.desired == value }
        }
    }
}
