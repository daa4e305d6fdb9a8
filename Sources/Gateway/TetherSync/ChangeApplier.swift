import Foundation
import LinkProtocol
import SyncContract
import TetherStore
import TetherPrimitives
import TetherSettings

/// Applies pulled changes to the gateway through TetherStore's public API, one store transaction per change,
/// idempotently: the server versions recorded in `ServerVersions` make a change applied once a no-op, so a page
/// pulled again after a failed gate changes nothing twice.
///
/// What a change does here:
/// - device upsert: a pairing decision of the backend (`paired`, `unpaired`, `blocked`) is applied to a device
///   this gateway has met; devices it has not met are only remembered (so later settings for them are not
///   dangling). `discovered` is no decision and changes nothing.
/// - device delete: a device this gateway has met is released (`unpaired`); its data stays until synced and pruned.
/// - settings upsert: for a device this gateway has met, the desired settings are overlaid and merged three ways
///   with what the device reported, and become the server base of later changes
///   (`DeviceSettingsService.applyServerSettings`); while a technician's change is unsent they are not applied
///   (its push meets them as a 409). The server's latest version is remembered for idempotency. Settings of devices not met here are fetched when they connect
///   (`SyncService.refreshSettings`).
/// - health sample delete (issue 14, the change lane): a sample this gateway holds (by uid, or by dedup key when the
///   server holds the reading under another uid) and has not deleted gets the backend's tombstone, under the
///   backend's uid and time (`HealthChange.deletedByBackend`); the health upload sends it back and hears
///   `duplicate`. A sample deleted here already keeps its own tombstone; when that deletion was a correction made
///   before the pull, the backend's deletion goes on to the replacement (the latest version of the reading): the
///   reading the backend withdrew does not live on as its correction. A sample this gateway never stored (another
///   gateway's) is nothing to do.
public struct ChangeApplier: Sendable {
    public let registry: DeviceRegistry
    public let settingsService: DeviceSettingsService
    public let versions: ServerVersions
    public let health: HealthStore

    public init(database: GatewayDatabase) {
        registry = DeviceRegistry(database: database)
        settingsService = DeviceSettingsService(database: database)
        versions = ServerVersions(cursors: SyncCursors(database: database))
        health = HealthStore(database: database)
    }

    public func knowledge(of serial: String) throws(StoreError) -> IntegrityGate.DeviceKnowledge {
        let recorded = try versions.device(serial)
        if recorded?.deleted == true { return .deleted }
        if try registry.device(serial: serial) != nil { return .local }
        return recorded == nil ? .unknown : .remote
    }

    /// Applies one change; `true` when the store changed.
    public func apply(_ change: Change, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> Bool {
        if change.kind == .healthSample { return try applyHealthDeletion(change, at: now, using: &random) }
        guard let serial = change.serial else { throw StoreError(.invalidRequest, "a \(change.kind.rawValue) change without a serial") }
        switch (change.kind, change.operation) {
        case (.device, .upsert):
            if let recorded = try versions.device(serial), recorded.version >= change.version { return false }
            var changed = false
            if let local = try registry.device(serial: serial), let wanted = Self.decision(change.device?.pairingState), local.pairingState != wanted {
                try registry.setPairingState(wanted, serial: serial, at: now, using: &random)
                changed = true
            }
            try versions.setDevice(serial, .init(version: change.version, deleted: false), at: now)
            return changed
        case (.device, .delete):
            if let recorded = try versions.device(serial), recorded.version >= change.version { return false }
            var changed = false
            if let local = try registry.device(serial: serial), local.pairingState == .paired || local.pairingState == .discovered {
                try registry.setPairingState(.unpaired, serial: serial, at: now, using: &random)
                changed = true
            }
            try versions.setDevice(serial, .init(version: change.version, deleted: true), at: now)
            return changed
        case (.deviceSettings, .upsert):
            guard let wanted = change.settings else { return false }
            if let recorded = try versions.settings(serial), recorded.version >= change.version { return false }
            guard try registry.device(serial: serial) != nil else { return false }
            let desired: DeviceSettings
            do {
                desired = try wanted.desired.settings()
            } catch {
                throw StoreError(.invalidRequest, "settings for \(serial): \(error.reason)")
            }
            // A technician's unsent change keeps its values and its base: its push meets this version as a 409.
            let author: TetherStore.SettingsAuthor = wanted.changedBy == .technician ? .technician : .backend
            let outcome = try settingsService.applyServerSettings(
                serial: serial, version: change.version, desired: desired, by: author, at: now, using: &random)
            try versions.setSettings(serial, .init(version: change.version, desired: wanted.desired), at: now)
            return outcome == .applied
        case (.deviceSettings, .delete), (.healthSample, _):
            return false
        }
    }

    private func applyHealthDeletion(_ change: Change, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> Bool {
        guard let tombstone = change.healthDeletion, change.operation == .delete else { return false }
        guard let sample = try latestVersion(tombstone), sample.deletedAt == nil else { return false }
        // The backend's uid only for the same sample uid: the server compares a tombstone stored under a uid field by field.
        let deletion = HealthChange.deletedByBackend(
            sampleUid: sample.uid, tombstoneUid: sample.uid == tombstone.sampleUid ? tombstone.uid : nil, note: tombstone.note,
            requestedAt: Timestamp(nanoseconds: tombstone.requestedAt))
        do {
            _ = try health.apply(deletion, at: now, using: &random)
        } catch {
            if case .store(let storage) = error { throw storage }
            throw StoreError(.invalidRequest, "health sample \(sample.uid): \(error)")
        }
        return true
    }

    /// The live version of the reading a backend tombstone names: the sample itself, or, when a correction here
    /// replaced it, the replacement (in turn). The last version found when the chain ends in a plain deletion.
    private func latestVersion(_ tombstone: HealthDeletionUpload) throws(StoreError) -> HealthSampleRecord? {
        guard var sample = try heldSample(tombstone) else { return nil }
        // A sample is corrected once and each replacement at most once: the chain ends; the bound is a guard.
        for _ in 0..<1_000 where sample.deletedAt != nil {
            guard let next = try health.deletion(ofSampleUid: sample.uid)?.replacementSampleUid,
                let replacement = try health.sample(uid: next)
            else { return sample }
            sample = replacement
        }
        return sample
    }

    /// The sample a backend tombstone names, as this gateway holds it: by uid, else by the reading's dedup key.
    private func heldSample(_ tombstone: HealthDeletionUpload) throws(StoreError) -> HealthSampleRecord? {
        if let sample = try health.sample(uid: tombstone.sampleUid) { return sample }
        guard let key = tombstone.sampleDedupKey else { return nil }
        return try health.sample(dedupKey: key)
    }

    /// The store half of the integrity gate: after `apply`, the store must hold what the change said.
    public func verify(_ change: Change) throws(StoreError) -> GateViolation? {
        if change.kind == .healthSample {
            guard let tombstone = change.healthDeletion, let sample = try latestVersion(tombstone) else { return nil }
            return sample.deletedAt == nil ? GateViolation(.notApplied, "health sample \(sample.uid) was deleted by the backend but is not deleted here") : nil
        }
        guard let serial = change.serial else { return GateViolation(.malformedChange, "a \(change.kind.rawValue) change without a serial") }
        switch (change.kind, change.operation) {
        case (.device, let operation):
            guard let recorded = try versions.device(serial), recorded.version >= change.version,
                recorded.deleted == (operation == .delete)
            else {
                return GateViolation(.notApplied, "device \(serial) version \(change.version) is not recorded")
            }
            guard let local = try registry.device(serial: serial) else { return nil }
            if operation == .delete, local.pairingState == .paired || local.pairingState == .discovered {
                return GateViolation(.notApplied, "device \(serial) was deleted but is still \(local.pairingState.rawValue) here")
            }
            if operation == .upsert, recorded.version == change.version, let wanted = Self.decision(change.device?.pairingState), local.pairingState != wanted {
                return GateViolation(.notApplied, "device \(serial) should be \(wanted.rawValue), is \(local.pairingState.rawValue)")
            }
            return nil
        case (.deviceSettings, .upsert):
            guard try registry.device(serial: serial) != nil, let wanted = change.settings else { return nil }
            guard let recorded = try versions.settings(serial), recorded.version >= change.version else {
                return GateViolation(.notApplied, "settings of \(serial) version \(change.version) are not recorded")
            }
            guard recorded.version == change.version, let desired = try? wanted.desired.settings() else { return nil }
            let local = try settingsService.settings(serial: serial)
            if let local, local.desiredChangedBy == .technician, (local.serverVersion ?? -1) < change.version {
                return nil  // held for the technician's unsent change (`applyServerSettings`)
            }
            guard Self.isSatisfied(desired, by: local) else {
                return GateViolation(.notApplied, "the desired settings of \(serial) do not hold version \(change.version)")
            }
            return nil
        case (.deviceSettings, .delete), (.healthSample, _):
            return nil
        }
    }

    /// Whether every setting in `desired` is already the desired value, or is held back by a conflict recorded
    /// for exactly that value (the merge keeps the device's value until someone decides).
    static func isSatisfied(_ desired: DeviceSettings, by record: DeviceSettingsRecord?) -> Bool {
        let have = record?.desiredSettings.map(SettingsMerge.values(of:)) ?? [:]
        let conflicts = record?.conflicts ?? []
        return SettingsMerge.values(of: desired).allSatisfy { key, value in
            have[key] == value || conflicts.contains { $0.key == key && $0.desired == value }
        }
    }

    /// The backend's pairing decisions; `discovered` is none.
    static func decision(_ state: SyncContract.PairingState?) -> DeviceRecord.PairingState? {
        switch state {
        case .paired?: .paired
        case .unpaired?: .unpaired
        case .blocked?: .blocked
        case .discovered?, nil: nil
        }
    }
}
