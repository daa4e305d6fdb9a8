import Foundation
import SyncContract

/// The server's tables as both backends read and write them (see `StoredTable`). The order of `key` and `values`
/// is the order of the INSERT column lists; the schema itself is the shipped migrations.
enum ServerTables {
    static let device = StoredTable<DeviceRow>(
        name: "device", scopedByTenant: true,
        key: [StoredColumn<DeviceRow>("serial", .text) { .text($0.serial) }],
        values: [
            StoredColumn<DeviceRow>("hardware_revision", .integer) { StoredValue($0.hardwareRevision) },
            StoredColumn<DeviceRow>("firmware_version", .text) { StoredValue($0.firmwareVersion) },
            StoredColumn<DeviceRow>("protocol_version", .integer) { StoredValue($0.protocolVersion) },
            StoredColumn<DeviceRow>("capabilities", .integer) { StoredValue($0.capabilities) },
            StoredColumn<DeviceRow>("pairing_state", .text) { .text($0.pairingState.rawValue) },
            StoredColumn<DeviceRow>("version", .bigint) { .integer($0.version) },
            StoredColumn<DeviceRow>("deleted", .boolean) { .bool($0.deleted) },
        ],
        read: { row in
            let pairingText = try row.text("pairing_state")
            guard let pairing = PairingState(rawValue: pairingText) else { throw StorageCorruption(description: "device.pairing_state \(pairingText)") }
            return DeviceRow(
                document: DevicePayload(
                    serial: try row.text("serial"), hardwareRevision: try row.optionalInt("hardware_revision"),
                    firmwareVersion: try row.optionalText("firmware_version"), protocolVersion: try row.optionalInt("protocol_version"),
                    capabilities: try row.int("capabilities"), pairingState: pairing),
                version: try row.integer("version"), deleted: try row.bool("deleted"))
        })

    static let settings = StoredTable<SettingsRow>(
        name: "device_settings", scopedByTenant: true,
        key: [StoredColumn<SettingsRow>("serial", .text) { .text($0.serial) }],
        values: [
            StoredColumn<SettingsRow>("version", .bigint) { .integer($0.version) },
            StoredColumn<SettingsRow>("desired", .json) { try .json($0.desired) },
            StoredColumn<SettingsRow>("changed_by", .text) { StoredValue($0.changedBy?.rawValue) },
            StoredColumn<SettingsRow>("reported", .json) { try .json($0.reported) },
            StoredColumn<SettingsRow>("reported_version", .bigint) { StoredValue($0.reportedVersion) },
            StoredColumn<SettingsRow>("conflicts", .json) { try .json($0.conflicts) },
        ],
        read: { row in
            var settings = SettingsRow(serial: try row.text("serial"))
            settings.version = try row.integer("version")
            settings.desired = try row.optionalJSON(SettingsDocument.self, "desired", table: "device_settings")
            settings.changedBy = try row.optionalText("changed_by").flatMap(SettingsChangeAuthor.init(rawValue:))
            settings.reported = try row.optionalJSON(SettingsDocument.self, "reported", table: "device_settings")
            settings.reportedVersion = try row.optionalInteger("reported_version")
            settings.conflicts = try row.json([SettingConflictPayload].self, "conflicts", table: "device_settings")
            return settings
        })

    static let event = StoredTable<EventRow>(
        name: "consumption_event", scopedByTenant: true,
        key: [
            StoredColumn<EventRow>("serial", .text) { .text($0.document.serial) },
            StoredColumn<EventRow>("boot_counter", .integer) { StoredValue($0.document.bootCounter) },
            StoredColumn<EventRow>("sequence", .bigint) { .integer($0.document.sequence) },
        ],
        values: [
            StoredColumn<EventRow>("ticks", .bigint) { .integer($0.document.ticks) },
            StoredColumn<EventRow>("utc_nanoseconds", .bigint) { StoredValue($0.document.utcNanoseconds) },
            StoredColumn<EventRow>("uncertainty_nanoseconds", .bigint) { StoredValue($0.document.uncertaintyNanoseconds) },
            StoredColumn<EventRow>("duration_milliseconds", .integer) { StoredValue($0.document.durationMilliseconds) },
            StoredColumn<EventRow>("intensity", .integer) { StoredValue($0.document.intensity) },
            StoredColumn<EventRow>("received_at", .bigint) { .integer($0.document.receivedAt) },
            StoredColumn<EventRow>("version", .bigint) { .integer($0.version) },
            StoredColumn<EventRow>("gateway", .text) { .text($0.gateway) },
        ],
        read: { row in
            EventRow(
                document: EventPayload(
                    serial: try row.text("serial"), bootCounter: try row.int("boot_counter"), sequence: try row.integer("sequence"),
                    ticks: try row.integer("ticks"), utcNanoseconds: try row.optionalInteger("utc_nanoseconds"),
                    uncertaintyNanoseconds: try row.optionalInteger("uncertainty_nanoseconds"),
                    durationMilliseconds: try row.int("duration_milliseconds"), intensity: try row.int("intensity"),
                    receivedAt: try row.integer("received_at")),
                version: try row.integer("version"), gateway: try row.text("gateway"))
        })

    /// The key columns repeat what the document says, so that the primary key can hold them.
    static let telemetry = StoredTable<TelemetryRow>(
        name: "telemetry", scopedByTenant: true,
        key: [
            StoredColumn<TelemetryRow>("serial", .text) { .text($0.document.serial) },
            StoredColumn<TelemetryRow>("kind", .text) { .text($0.document.kind.rawValue) },
            StoredColumn<TelemetryRow>("received_at", .bigint) { .integer($0.document.receivedAt) },
        ],
        values: [
            StoredColumn<TelemetryRow>("document", .json) { try .json($0.document) },
            StoredColumn<TelemetryRow>("version", .bigint) { .integer($0.version) },
            StoredColumn<TelemetryRow>("gateway", .text) { .text($0.gateway) },
        ],
        read: { row in
            TelemetryRow(
                document: try row.json(TelemetryPayload.self, "document", table: "telemetry"), version: try row.integer("version"),
                gateway: try row.text("gateway"))
        })

    /// Only ever inserted: an update ends once. The columns beside the document are what an operator looks a
    /// device's updates up by.
    static let firmwareUpdate = StoredTable<FirmwareUpdateRow>(
        name: "firmware_update", scopedByTenant: true,
        key: [StoredColumn<FirmwareUpdateRow>("uid", .text) { .text($0.document.uid) }],
        values: [
            StoredColumn<FirmwareUpdateRow>("serial", .text) { StoredValue($0.document.serial) },
            StoredColumn<FirmwareUpdateRow>("address", .text) { .text($0.document.address) },
            StoredColumn<FirmwareUpdateRow>("outcome", .text) { .text($0.document.outcome.rawValue) },
            StoredColumn<FirmwareUpdateRow>("image_version", .text) { .text($0.document.imageVersion) },
            StoredColumn<FirmwareUpdateRow>("finished_at", .bigint) { .integer($0.document.finishedAt) },
            StoredColumn<FirmwareUpdateRow>("document", .json) { try .json($0.document) },
            StoredColumn<FirmwareUpdateRow>("gateway", .text) { .text($0.gateway) },
        ],
        read: { row in
            FirmwareUpdateRow(
                document: try row.json(FirmwareUpdatePayload.self, "document", table: "firmware_update"), gateway: try row.text("gateway"))
        })

    /// Only ever inserted: a command id is applied once.
    static let commandLog = StoredTable<CommandLogRow>(
        name: "command_log", scopedByTenant: true,
        key: [StoredColumn<CommandLogRow>("id", .uuid) { .text($0.id.uuidString.lowercased()) }],
        values: [
            StoredColumn<CommandLogRow>("gateway", .text) { .text($0.gateway) },
            StoredColumn<CommandLogRow>("fingerprint", .bytes) { .bytes($0.fingerprint) },
            StoredColumn<CommandLogRow>("version", .bigint) { StoredValue($0.version) },
        ],
        read: { row in
            let idText = try row.text("id", kind: .uuid)
            guard let id = UUID(uuidString: idText) else { throw StorageCorruption(description: "command_log.id \(idText)") }
            return CommandLogRow(id: id, gateway: try row.text("gateway"), fingerprint: try row.bytes("fingerprint"), version: try row.optionalInteger("version"))
        })

    /// Tokens are looked up by id before the tenant is known: the tenant is a column here, not the scope.
    static let token = StoredTable<TokenRecord>(
        name: "gateway_token", scopedByTenant: false,
        key: [StoredColumn<TokenRecord>("id", .text) { .text($0.id) }],
        values: [
            StoredColumn<TokenRecord>("secret_hash", .bytes) { .bytes($0.secretHash) },
            StoredColumn<TokenRecord>("tenant", .text) { .text($0.tenant) },
            StoredColumn<TokenRecord>("gateway", .text) { .text($0.gateway) },
            StoredColumn<TokenRecord>("created_at", .timestamp) { .date($0.createdAt) },
            StoredColumn<TokenRecord>("revoked_at", .timestamp) { StoredValue($0.revokedAt) },
        ],
        read: { row in
            guard let createdAt = try row.optionalDate("created_at") else { throw StorageCorruption(description: "gateway_token.created_at is NULL") }
            return TokenRecord(
                id: try row.text("id"), secretHash: try row.bytes("secret_hash"), tenant: try row.text("tenant"), gateway: try row.text("gateway"),
                createdAt: createdAt, revokedAt: try row.optionalDate("revoked_at"))
        })
}
