import Crypto
import Foundation
import SyncContract

/// The keys a batch touches: what a store reads, inside the batch's transaction, before planning it.
public struct BatchKeys: Sendable {
    public var commandIDs: [UUID] = []
    /// Devices and settings rows (events and telemetry need their device too).
    public var serials: Set<String> = []
    public var events: Set<StoredEventKey> = []
    public var telemetry: Set<StoredTelemetryKey> = []
    public var firmwareUpdates: Set<String> = []

    public init() {}

    public init(commands: [PushCommand]) {
        for command in commands {
            commandIDs.append(command.id)
            guard let identity = EntityIdentity(type: command.entityType, id: command.entityID) else { continue }
            if let serial = identity.serial { serials.insert(serial) }
            switch identity {
            case .consumptionEvent(let serial, let boot, let sequence): events.insert(StoredEventKey(serial: serial, bootCounter: boot, sequence: sequence))
            case .deviceTelemetry(let serial, let kind, let receivedAt): telemetry.insert(StoredTelemetryKey(serial: serial, kind: kind, receivedAt: receivedAt))
            case .firmwareUpdate(let uid):
                firmwareUpdates.insert(uid)
                // The device it names, if valid, is made when unknown (the planner's last rule).
                if case .firmwareUpdate(let document) = command.payload, let serial = document.serial, EntityIdentity.isValidSerial(serial) {
                    serials.insert(serial)
                }
            case .device, .deviceSettings: break
            }
        }
    }
}

/// The current rows for a batch's keys, as read in its transaction. Absent keys have no row.
public struct BatchState: Sendable {
    public var logged: [UUID: CommandLogRow] = [:]
    public var devices: [String: DeviceRow] = [:]
    public var settings: [String: SettingsRow] = [:]
    public var events: [StoredEventKey: EventRow] = [:]
    public var telemetry: [StoredTelemetryKey: TelemetryRow] = [:]
    public var firmwareUpdates: [String: FirmwareUpdateRow] = [:]

    public init() {}
}

/// What a planned batch writes, as final row states: the store upserts `devices`, `settings`, `events` and
/// `telemetry`, deletes the `deleted…` keys (disjoint from the upserts), inserts `commandLog` and appends `feed` in
/// order. All in the transaction that read the state.
public struct BatchWrites: Sendable {
    public var commandLog: [CommandLogRow] = []
    public var devices: [String: DeviceRow] = [:]
    public var settings: [String: SettingsRow] = [:]
    public var deletedSettings: Set<String> = []
    public var events: [StoredEventKey: EventRow] = [:]
    public var deletedEvents: Set<StoredEventKey> = []
    public var telemetry: [StoredTelemetryKey: TelemetryRow] = [:]
    public var deletedTelemetry: Set<StoredTelemetryKey> = []
    /// Inserted only: a firmware update's record is never changed.
    public var firmwareUpdates: [String: FirmwareUpdateRow] = [:]
    public var feed: [FeedEntry] = []

    public var isEmpty: Bool {
        commandLog.isEmpty && devices.isEmpty && settings.isEmpty && deletedSettings.isEmpty && events.isEmpty && deletedEvents.isEmpty
            && telemetry.isEmpty && deletedTelemetry.isEmpty && firmwareUpdates.isEmpty && feed.isEmpty
    }
}

/// The rules of the sync backend, free of storage: given the rows a batch touches, decide each command's result
/// and the writes that apply it. Both stores run the same planner, so SQLite and PostgreSQL cannot disagree.
///
/// Per command, in request order (later commands see the effects of earlier ones):
/// 1. An id already in the command log is `duplicate` (with the version it left) if its fingerprint matches, and
///    `rejected` if the same id now names other content.
/// 2. A command whose `entity_id`, operation or payload is invalid is `rejected` with the reason.
/// 3. Otherwise the entity's rule decides `applied` or `conflict`; only `applied` (and `duplicate` of an existing
///    identical event or telemetry record) writes, and only those are logged.
///
/// Entity rules (docs/specs/sync-api.yaml, "Push semantics"):
/// - device create/update: upsert; a change-feed entry when anything changed. Delete leaves a tombstone.
/// - consumptionEvent, deviceTelemetry create: insert; an existing identical record makes it a `duplicate`, an
///   existing different one a `conflict`. Update: upsert of the full document. Delete: remove.
/// - deviceSettings update: `reported` and the merge conflicts always follow the gateway; `desired` changes only
///   when the gateway's technician changed it, and only if `base_version` is the server's current version (else a
///   `conflict` carrying the server's desired settings).
/// - firmwareUpdate create: insert, once: an identical record makes it a `duplicate`, a different one a `conflict`.
///   An update's end is history: update and delete are `rejected`.
/// - An event, telemetry record, settings or firmware update for an unknown device creates the device
///   (`discovered`), as the gateway does, so no row ever references a missing device.
public struct BatchPlanner: Sendable {
    public private(set) var state: BatchState
    public private(set) var writes = BatchWrites()

    public init(state: BatchState) {
        self.state = state
    }

    // MARK: - Pushed commands

    public mutating func apply(_ command: PushCommand, from gateway: String) -> CommandResult {
        let fingerprint = CommandFingerprint.of(command)
        if let logged = state.logged[command.id] {
            guard logged.fingerprint == fingerprint else {
                return .rejected(command.id, "idempotency key \(command.id.uuidString.lowercased()) was already used for a different command")
            }
            return .duplicate(command.id, version: logged.version)
        }
        let outcome = decide(command, from: gateway)
        switch outcome.status {
        case .applied, .duplicate:
            let row = CommandLogRow(id: command.id, gateway: gateway, fingerprint: fingerprint, version: outcome.version)
            state.logged[command.id] = row
            writes.commandLog.append(row)
        case .conflict, .rejected:
            break
        }
        return outcome
    }

    private mutating func decide(_ command: PushCommand, from gateway: String) -> CommandResult {
        let id = command.id
        guard let identity = EntityIdentity(type: command.entityType, id: command.entityID) else {
            return .rejected(id, "entity_id \"\(command.entityID)\" is not a valid \(command.entityType.rawValue) identity")
        }
        if case .unreadable(let reason) = command.payload { return .rejected(id, reason) }
        switch (identity, command.operation, command.payload) {
        case (.device(let serial), .create, .device(let document)), (.device(let serial), .update, .device(let document)):
            guard document.serial == serial else { return .rejected(id, "payload serial \(document.serial) does not match entity_id \(serial)") }
            if let problem = document.problem { return .rejected(id, problem) }
            return .applied(id, version: upsertDevice(document, origin: gateway))
        case (.device(let serial), .delete, _):
            return .applied(id, version: deleteDevice(serial: serial, origin: gateway))

        case (.consumptionEvent(let serial, let boot, let sequence), .create, .consumptionEvent(let document)),
            (.consumptionEvent(let serial, let boot, let sequence), .update, .consumptionEvent(let document)):
            guard document.serial == serial, document.bootCounter == boot, document.sequence == sequence else {
                return .rejected(id, "payload identity does not match entity_id \(command.entityID)")
            }
            if let problem = document.problem { return .rejected(id, problem) }
            return writeEvent(document, create: command.operation == .create, id: id, gateway: gateway)
        case (.consumptionEvent(let serial, let boot, let sequence), .delete, _):
            let key = StoredEventKey(serial: serial, bootCounter: boot, sequence: sequence)
            state.events[key] = nil
            writes.events[key] = nil
            writes.deletedEvents.insert(key)
            return .applied(id)

        case (.deviceTelemetry(let serial, let kind, let receivedAt), .create, .deviceTelemetry(let document)),
            (.deviceTelemetry(let serial, let kind, let receivedAt), .update, .deviceTelemetry(let document)):
            guard document.serial == serial, document.kind == kind, document.receivedAt == receivedAt else {
                return .rejected(id, "payload identity does not match entity_id \(command.entityID)")
            }
            if let problem = document.problem { return .rejected(id, problem) }
            return writeTelemetry(document, create: command.operation == .create, id: id, gateway: gateway)
        case (.deviceTelemetry(let serial, let kind, let receivedAt), .delete, _):
            let key = StoredTelemetryKey(serial: serial, kind: kind, receivedAt: receivedAt)
            state.telemetry[key] = nil
            writes.telemetry[key] = nil
            writes.deletedTelemetry.insert(key)
            return .applied(id)

        case (.deviceSettings(let serial), .create, .deviceSettings(let document)), (.deviceSettings(let serial), .update, .deviceSettings(let document)):
            guard document.serial == serial else { return .rejected(id, "payload serial \(document.serial) does not match entity_id \(serial)") }
            if let problem = document.problem { return .rejected(id, problem) }
            return writeReportedSettings(document, baseVersion: command.baseVersion, id: id, gateway: gateway)
        case (.deviceSettings, .delete, _):
            return .rejected(id, "device settings are not deleted on their own: delete the device")

        case (.firmwareUpdate(let uid), .create, .firmwareUpdate(let document)):
            guard document.uid == uid else { return .rejected(id, "payload uid \(document.uid) does not match entity_id \(uid)") }
            if let problem = document.problem { return .rejected(id, problem) }
            return writeFirmwareUpdate(document, id: id, gateway: gateway)
        case (.firmwareUpdate, .update, _), (.firmwareUpdate, .delete, _):
            return .rejected(id, "a firmware update's record is written once, when the update ends: \(command.operation.rawValue) does not apply")

        case (_, .create, _), (_, .update, _):
            return .rejected(id, "the payload is not a \(command.entityType.rawValue) document")
        }
    }

    private mutating func writeEvent(_ document: EventPayload, create: Bool, id: UUID, gateway: String) -> CommandResult {
        let key = StoredEventKey(serial: document.serial, bootCounter: document.bootCounter, sequence: document.sequence)
        ensureDevice(document.serial, origin: gateway)
        if let existing = state.events[key] {
            if existing.document == document { return create ? .duplicate(id, version: existing.version) : .applied(id, version: existing.version) }
            if create {
                return .conflict(
                    id, serverVersion: existing.version, serverValue: (try? JSONValue(encoding: existing.document)) ?? .null,
                    reason: "event \(key.serial)/\(key.bootCounter)/\(key.sequence) exists with different content")
            }
        }
        let row = EventRow(document: document, version: (state.events[key]?.version ?? 0) + 1, gateway: gateway)
        state.events[key] = row
        writes.events[key] = row
        writes.deletedEvents.remove(key)
        return .applied(id, version: row.version)
    }

    private mutating func writeTelemetry(_ document: TelemetryPayload, create: Bool, id: UUID, gateway: String) -> CommandResult {
        let key = StoredTelemetryKey(serial: document.serial, kind: document.kind, receivedAt: document.receivedAt)
        ensureDevice(document.serial, origin: gateway)
        if let existing = state.telemetry[key] {
            if existing.document == document { return create ? .duplicate(id, version: existing.version) : .applied(id, version: existing.version) }
            if create {
                return .conflict(
                    id, serverVersion: existing.version, serverValue: (try? JSONValue(encoding: existing.document)) ?? .null,
                    reason: "\(key.kind.rawValue) telemetry of \(key.serial) at \(key.receivedAt) exists with different content")
            }
        }
        let row = TelemetryRow(document: document, version: (state.telemetry[key]?.version ?? 0) + 1, gateway: gateway)
        state.telemetry[key] = row
        writes.telemetry[key] = row
        writes.deletedTelemetry.remove(key)
        return .applied(id, version: row.version)
    }

    private mutating func writeFirmwareUpdate(_ document: FirmwareUpdatePayload, id: UUID, gateway: String) -> CommandResult {
        if let existing = state.firmwareUpdates[document.uid] {
            if existing.document == document { return .duplicate(id, version: 1) }
            return .conflict(
                id, serverVersion: 1, serverValue: (try? JSONValue(encoding: existing.document)) ?? .null,
                reason: "firmware update \(document.uid) was recorded with different content")
        }
        if let serial = document.serial { ensureDevice(serial, origin: gateway) }
        let row = FirmwareUpdateRow(document: document, gateway: gateway)
        state.firmwareUpdates[document.uid] = row
        writes.firmwareUpdates[document.uid] = row
        return .applied(id, version: 1)
    }

    private mutating func writeReportedSettings(_ document: SettingsPayload, baseVersion: Int64?, id: UUID, gateway: String) -> CommandResult {
        let serial = document.serial
        if let device = state.devices[serial], device.deleted {
            return .rejected(id, "device \(serial) was deleted from the registry; its settings are not kept")
        }
        var row = state.settings[serial] ?? SettingsRow(serial: serial)
        var desiredChanged = false
        if document.desiredChangedBy == .technician, let desired = document.desired, desired != row.desired {
            // A technician's change on the gateway builds on the server version the gateway last saw.
            guard (baseVersion ?? 0) == row.version else {
                return .conflict(
                    id, serverVersion: row.version, serverValue: row.desired.flatMap { try? JSONValue(encoding: $0) } ?? .null,
                    reason: "the server's settings are at version \(row.version); the gateway's change builds on \(baseVersion.map(String.init) ?? "none")")
            }
            row.desired = desired
            row.changedBy = .technician
            row.version += 1
            desiredChanged = true
        }
        ensureDevice(serial, origin: gateway)
        row.reported = document.reported
        row.reportedVersion = document.reportedVersion
        row.conflicts = document.conflicts
        if row != state.settings[serial] {
            state.settings[serial] = row
            writes.settings[serial] = row
            writes.deletedSettings.remove(serial)
        }
        if desiredChanged, let desired = row.desired, let author = row.changedBy {
            appendFeed(Change(kind: .deviceSettings, operation: .upsert, serial: serial, version: row.version, settings: .init(desired: desired, changedBy: author)), origin: gateway)
        }
        return .applied(id, version: row.version)
    }

    // MARK: - Registry and settings changes (pushes, the settings endpoint, the operator)

    /// Creates or updates a device; returns its version. A delete is undone by any document that does not leave
    /// the device unpaired (the device is back on some gateway's link).
    ///
    /// A gateway's document is merged into what the server knows, because a gateway may know less than the
    /// tenant: identity fields it does not have (null) keep their values, a document without any identity field
    /// (a placeholder for a device only heard of) keeps the capabilities, and `discovered` (no decision) never
    /// overrides a pairing decision. The operator's documents (`origin` nil) are taken as they are.
    @discardableResult
    public mutating func upsertDevice(_ document: DevicePayload, origin: String?) -> Int64 {
        let existing = state.devices[document.serial]
        var document = document
        if let existing, !existing.deleted, origin != nil {
            let placeholder = document.hardwareRevision == nil && document.firmwareVersion == nil && document.protocolVersion == nil
            document.hardwareRevision = document.hardwareRevision ?? existing.hardwareRevision
            document.firmwareVersion = document.firmwareVersion ?? existing.firmwareVersion
            document.protocolVersion = document.protocolVersion ?? existing.protocolVersion
            if placeholder { document.capabilities = existing.capabilities }
            if document.pairingState == .discovered { document.pairingState = existing.pairingState }
        }
        if let existing {
            if existing.deleted && document.pairingState == .unpaired { return existing.version }
            if !existing.deleted && existing.document == document { return existing.version }
        }
        let row = DeviceRow(document: document, version: (existing?.version ?? 0) + 1)
        state.devices[document.serial] = row
        writes.devices[document.serial] = row
        appendFeed(Change(kind: .device, operation: .upsert, serial: row.serial, version: row.version, device: row.document), origin: origin)
        return row.version
    }

    /// Marks a device deleted (its settings go with it); returns its version, `nil` when there was no device.
    @discardableResult
    public mutating func deleteDevice(serial: String, origin: String?) -> Int64? {
        guard var row = state.devices[serial] else { return nil }
        guard !row.deleted else { return row.version }
        row.deleted = true
        row.version += 1
        state.devices[serial] = row
        writes.devices[serial] = row
        if state.settings[serial] != nil {
            state.settings[serial] = nil
            writes.settings[serial] = nil
            writes.deletedSettings.insert(serial)
        }
        appendFeed(Change(kind: .device, operation: .delete, serial: serial, version: row.version), origin: origin)
        return row.version
    }

    public enum SettingsOutcome: Hashable, Sendable {
        case updated(DeviceSettingsResource)
        case noSuchDevice
        case versionMismatch(current: Int64)
    }

    /// Replaces the desired settings of an existing device. `ifMatch`: the versions the caller's If-Match names
    /// (`nil` for `*` or an operator without a precondition).
    public mutating func replaceDesired(serial: String, desired: SettingsDocument, author: SettingsChangeAuthor, origin: String?, ifMatch: [Int64]?) -> SettingsOutcome {
        guard let device = state.devices[serial], !device.deleted else { return .noSuchDevice }
        var row = state.settings[serial] ?? SettingsRow(serial: serial)
        if let ifMatch, !ifMatch.contains(row.version) { return .versionMismatch(current: row.version) }
        guard row.desired != desired || row.changedBy != author else { return .updated(row.resource) }
        row.desired = desired
        row.changedBy = author
        row.version += 1
        state.settings[serial] = row
        writes.settings[serial] = row
        writes.deletedSettings.remove(serial)
        appendFeed(Change(kind: .deviceSettings, operation: .upsert, serial: serial, version: row.version, settings: .init(desired: desired, changedBy: author)), origin: origin)
        return .updated(row.resource)
    }

    private mutating func ensureDevice(_ serial: String, origin: String) {
        guard state.devices[serial] == nil else { return }
        upsertDevice(DevicePayload(serial: serial, pairingState: .discovered), origin: origin)
    }

    private mutating func appendFeed(_ change: Change, origin: String?) {
        writes.feed.append(FeedEntry(origin: origin, change: change))
    }
}

/// SHA-256 over a command's canonical form: entity type, entity id, operation, base version and the payload's
/// fields in a fixed order. Two commands with the same fingerprint ask for the same thing.
enum CommandFingerprint {
    static func of(_ command: PushCommand) -> [UInt8] {
        var text = "\(command.entityType.rawValue)\u{1F}\(command.entityID)\u{1F}\(command.operation.rawValue)\u{1F}\(command.baseVersion.map(String.init) ?? "-")\u{1F}"
        switch command.payload {
        case .consumptionEvent(let e):
            text += "\(e.serial)\u{1F}\(e.bootCounter)\u{1F}\(e.sequence)\u{1F}\(e.ticks)\u{1F}\(e.utcNanoseconds.map(String.init) ?? "-")\u{1F}"
            text += "\(e.uncertaintyNanoseconds.map(String.init) ?? "-")\u{1F}\(e.durationMilliseconds)\u{1F}\(e.intensity)\u{1F}\(e.receivedAt)"
        case .device, .deviceTelemetry, .deviceSettings, .firmwareUpdate:
            // Rare and small: the sorted-key JSON of the document is canonical enough for one implementation.
            text += canonicalJSON(command.payload)
        case .identityOnly:
            text += "identity"
        case .unreadable(let reason):
            text += "unreadable\u{1F}\(reason)"
        }
        return Array(SHA256.hash(data: Array(text.utf8)))
    }

    private static func canonicalJSON(_ payload: CommandPayload) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data: Data?
        switch payload {
        case .device(let document): data = try? encoder.encode(document)
        case .deviceTelemetry(let document): data = try? encoder.encode(document)
        case .deviceSettings(let document): data = try? encoder.encode(document)
        case .firmwareUpdate(let document): data = try? encoder.encode(document)
        case .consumptionEvent(let document): data = try? encoder.encode(document)
        case .identityOnly, .unreadable: data = nil
        }
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "-"
    }
}
