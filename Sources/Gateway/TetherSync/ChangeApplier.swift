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
public struct ChangeApplier: Sendable {
    public let registry: DeviceRegistry
    public let settingsService: DeviceSettingsService
    public let versions: ServerVersions

    public init(database: GatewayDatabase) {
        registry = DeviceRegistry(database: database)
        settingsService = DeviceSettingsService(database: database)
        versions = ServerVersions(cursors: SyncCursors(database: database))
    }

    public func knowledge(of serial: String) throws(StoreError) -> IntegrityGate.DeviceKnowledge {
        let recorded = try versions.device(serial)
        if recorded?.deleted == true { return .deleted }
        if try registry.device(serial: serial) != nil { return .local }
        return recorded == nil ? .unknown : .remote
    }

    /// Applies one change; `true` when the store changed.
    public func apply(_ change: Change, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) -> Bool {
        switch (change.kind, change.operation) {
        case (.device, .upsert):
            if let recorded = try versions.device(change.serial), recorded.version >= change.version { return false }
            var changed = false
            if let local = try registry.device(serial: change.serial), let wanted = Self.decision(change.device?.pairingState), local.pairingState != wanted {
                try registry.setPairingState(wanted, serial: change.serial, at: now, using: &random)
                changed = true
            }
            try versions.setDevice(change.serial, .init(version: change.version, deleted: false), at: now)
            return changed
        case (.device, .delete):
            if let recorded = try versions.device(change.serial), recorded.version >= change.version { return false }
            var changed = false
            if let local = try registry.device(serial: change.serial), local.pairingState == .paired || local.pairingState == .discovered {
                try registry.setPairingState(.unpaired, serial: change.serial, at: now, using: &random)
                changed = true
            }
            try versions.setDevice(change.serial, .init(version: change.version, deleted: true), at: now)
            return changed
        case (.deviceSettings, .upsert):
            guard let wanted = change.settings else { return false }
            if let recorded = try versions.settings(change.serial), recorded.version >= change.version { return false }
            guard try registry.device(serial: change.serial) != nil else { return false }
            let desired: DeviceSettings
            do {
                desired = try wanted.desired.settings()
            } catch {
                throw StoreError(.invalidRequest, "settings for \(change.serial): \(error.reason)")
            }
            // A technician's unsent change keeps its values and its base: its push meets this version as a 409.
            let author: TetherStore.SettingsAuthor = wanted.changedBy == .technician ? .technician : .backend
            let outcome = try settingsService.applyServerSettings(
                serial: change.serial, version: change.version, desired: desired, by: author, at: now, using: &random)
            try versions.setSettings(change.serial, .init(version: change.version, desired: wanted.desired), at: now)
            return outcome == .applied
        case (.deviceSettings, .delete):
            return false
        }
    }

    /// The store half of the integrity gate: after `apply`, the store must hold what the change said.
    public func verify(_ change: Change) throws(StoreError) -> GateViolation? {
        switch (change.kind, change.operation) {
        case (.device, let operation):
            guard let recorded = try versions.device(change.serial), recorded.version >= change.version,
                recorded.deleted == (operation == .delete)
            else {
                return GateViolation(.notApplied, "device \(change.serial) version \(change.version) is not recorded")
            }
            guard let local = try registry.device(serial: change.serial) else { return nil }
            if operation == .delete, local.pairingState == .paired || local.pairingState == .discovered {
                return GateViolation(.notApplied, "device \(change.serial) was deleted but is still \(local.pairingState.rawValue) here")
            }
            if operation == .upsert, recorded.version == change.version, let wanted = Self.decision(change.device?.pairingState), local.pairingState != wanted {
                return GateViolation(.notApplied, "device \(change.serial) should be \(wanted.rawValue), is \(local.pairingState.rawValue)")
            }
            return nil
        case (.deviceSettings, .upsert):
            guard try registry.device(serial: change.serial) != nil, let wanted = change.settings else { return nil }
            guard let recorded = try versions.settings(change.serial), recorded.version >= change.version else {
                return GateViolation(.notApplied, "settings of \(change.serial) version \(change.version) are not recorded")
            }
            guard recorded.version == change.version, let desired = try? wanted.desired.settings() else { return nil }
            let local = try settingsService.settings(serial: change.serial)
            if let local, local.desiredChangedBy == .technician, (local.serverVersion ?? -1) < change.version {
                return nil  // held for the technician's unsent change (`applyServerSettings`)
            }
            guard Self.isSatisfied(desired, by: local) else {
                return GateViolation(.notApplied, "the desired settings of \(change.serial) do not hold version \(change.version)")
            }
            return nil
        case (.deviceSettings, .delete):
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
