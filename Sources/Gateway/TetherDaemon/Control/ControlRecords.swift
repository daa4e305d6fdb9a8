import DBus
import Foundation
import TetherGateway
import TetherStore
import TetherSync
import TetherPrimitives

/// The `a{sv}` records of docs/specs/control-api.md, built from store rows and the daemon's live state. A field with
/// no value is left out of the dictionary.
enum ControlRecords {
    static func dictionary(_ fields: [String: DBusValue?]) -> DBusValue {
        .variantDictionary(fields.compactMapValues { $0 })
    }

    static func list(_ records: [DBusValue]) -> DBusValue {
        .array(elementSignature: "a{sv}", records)
    }

    static func status(summary: StoreQueries.Summary, gateway: GatewayStatus?, sync: SyncStatus?, startedAt: Int64, adapter: String, version: String) -> DBusValue {
        dictionary([
            "version": .string(version),
            "started_at": .int64(startedAt),
            "bluez_available": .bool(gateway?.bluezAvailable ?? false),
            "agent_error": gateway?.agentError.map { .string($0) },
            "adapter": .string(adapter),
            "scanning": .bool(gateway?.scanning ?? false),
            "devices_known": .uint32(UInt32(clamping: max(summary.devicesKnown, gateway?.devicesKnown ?? 0))),
            "devices_connected": .uint32(UInt32(clamping: gateway?.devicesConnected ?? 0)),
            "outbox_pending": .uint32(UInt32(clamping: summary.outbox.pending)),
            "outbox_in_flight": .uint32(UInt32(clamping: summary.outbox.inProgress)),
            "outbox_failed": .uint32(UInt32(clamping: summary.outbox.failed)),
            "outbox_conflict": .uint32(UInt32(clamping: summary.outbox.conflict)),
            "outbox_dead": .uint32(UInt32(clamping: summary.outbox.deadLetter)),
            "outbox_oldest_pending_age": summary.oldestPendingAgeNanoseconds.map { .int64($0) },
            "conflicts": .uint32(UInt32(clamping: summary.conflicts)),
            "last_sync_at": sync?.lastResult.map { .int64(nanoseconds($0.finishedAt)) },
            "last_sync_result": .string(sync?.lastResult.map { $0.succeeded ? "ok" : "failed" } ?? "never"),
            "last_sync_error": sync?.lastResult?.failure.map { .string($0.description) },
            "sync_clock_skew": sync?.clockSkew.map { .int64($0.offset.nanoseconds) },
            "database_bytes": .int64(summary.databaseBytes),
            "health_samples_waiting": .uint32(UInt32(clamping: waiting(summary.healthBacklog.samples))),
            "health_samples_failed": .uint32(UInt32(clamping: summary.healthBacklog.samples[.failed] ?? 0)),
            "health_samples_rejected": .uint32(UInt32(clamping: summary.healthBacklog.samples[.rejected] ?? 0)),
            "health_deletions_waiting": .uint32(UInt32(clamping: waiting(summary.healthBacklog.deletions))),
            "sqlite_heap_bytes": summary.sqliteHeap.map { .int64($0.bytes) },
            "sqlite_heap_highwater_bytes": summary.sqliteHeap.map { .int64($0.highwaterBytes) },
            "storage": .string(summary.storageState),
            "events_stored": .uint64(UInt64(clamping: summary.eventsStored)),
        ])
    }

    /// Rows the health uploader will still send: pending, leased to a request in flight, or failed and retried.
    /// Rejected rows are not waiting: the backend refused them for good (counted apart).
    static func waiting(_ counts: [HealthUploadState: Int]) -> Int {
        [HealthUploadState.pending, .leased, .failed].reduce(0) { $0 + (counts[$1] ?? 0) }
    }

    static func nanoseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1e9).rounded()) }

    /// A device as the gateway sees it, completed from the store's row (pairing state, last seen, firmware) when
    /// the gateway does not know it (a device that is not adopted).
    static func device(gateway: GatewayDevice?, record: DeviceRecord?, eventsStored: Int?, runningImage: PeripheralRecord.RunningImage? = nil) -> DBusValue {
        let address = gateway?.address ?? record?.address
        let fields: [String: DBusValue?] = [
            "serial": (gateway?.serial ?? record?.serial).map { .string($0) },
            "address": address.map { .string($0) },
            "name": gateway?.name.map { .string($0) },
            "paired": .bool(gateway?.paired ?? (record?.pairingState == .paired)),
            "pairing_state": record.map { .string($0.pairingState.rawValue) },
            "state": .string(gateway?.state.rawValue ?? "idle"),
            "attempts": .uint32(UInt32(clamping: gateway?.attempts ?? 0)),
            "last_error": gateway?.lastError.map { .string($0) },
            "held_for": gateway?.heldFor.map { .string($0) },
            "last_seen_at": (gateway?.lastSeenAt?.nanoseconds ?? record?.lastSeenAt).map { .int64($0) },
            "rssi": gateway?.rssi.map { .int16($0) },
            "firmware": (gateway?.firmware ?? record?.firmwareVersion).map { .string($0) },
            "battery_percent": gateway?.batteryPercent.map { .byte($0) },
            "events_stored": (eventsStored.map { UInt64(clamping: $0) } ?? gateway?.eventsStored).map { .uint64($0) },
            "frames_received": .uint64(gateway?.framesReceived ?? 0),
            "frames_sent": .uint64(gateway?.framesSent ?? 0),
            "notify_method": gateway?.notifyMethod.map { .string($0.rawValue) },
            "mtu": gateway?.mtu.map { .uint16(UInt16(clamping: $0)) },
        ]
        return dictionary(fields.merging(runningImageFields(runningImage)) { $1 })
    }

    /// docs/specs/control-api.md, "Device": the MCUboot image the device runs after tetherd's latest update that left
    /// it on one (the peripheral registry's running image), absent when tetherd never updated it.
    static func runningImageFields(_ image: PeripheralRecord.RunningImage?) -> [String: DBusValue?] {
        guard let image else { return [:] }
        return [
            "running_image_version": .string(image.version),
            "running_image_hash": .string(Hex.encode(image.hash)),
            "running_image_confirmed": .bool(image.confirmed),
            "running_image_update": .string(image.updateUid),
        ]
    }

    static func scanResult(_ result: ScanResult) -> DBusValue {
        dictionary([
            "address": .string(result.address),
            "name": result.name.map { .string($0) },
            "rssi": result.rssi.map { .int16($0) },
            "known": .bool(result.known),
            "paired": .bool(result.paired),
            "last_seen_at": .int64(result.lastSeenAt.nanoseconds),
        ])
    }

    static func syncFinished(_ finished: SyncFinished) -> DBusValue {
        let report = finished.report
        return dictionary([
            "result": .string(report.succeeded ? "ok" : "failed"),
            "pushed": .uint32(UInt32(clamping: report.push.commandsSent)),
            "pulled": .uint32(UInt32(clamping: report.pull.changes)),
            "dead": .uint32(UInt32(clamping: finished.status.outbox?.deadLetter ?? 0)),
            "conflicts": .uint32(UInt32(clamping: report.push.conflicts)),
            "error": report.failure.map { .string($0.description) },
        ])
    }

    static func settings(serial: String, record: DeviceSettingsRecord?) -> DBusValue {
        var fields: [String: DBusValue] = ["serial": .string(serial)]
        if let record {
            fields["version"] = .uint64(UInt64(record.desiredVersion ?? record.reportedVersion ?? 0))
            if let desired = record.desiredVersion { fields["desired_version"] = .uint64(UInt64(desired)) }
            if let reported = record.reportedVersion { fields["reported_version"] = .uint64(UInt64(reported)) }
            fields["confirmed"] = .bool(record.isConfirmed)
            if let desired = record.desiredSettings { fields.merge(SettingFields.entries(desired, prefix: "desired")) { $1 } }
            if let reported = record.reportedSettings { fields.merge(SettingFields.entries(reported, prefix: "reported")) { $1 } }
        } else {
            fields["version"] = .uint64(0)
        }
        return .variantDictionary(fields)
    }

    /// The store's statuses under the control API's names (docs/specs/control-api.md, "Outbox command").
    static let statusNames: [OutboxCommandRecord.Status: String] = [
        .pending: "pending", .inProgress: "in_flight", .failed: "failed", .conflict: "conflict", .deadLetter: "dead",
    ]

    static func outboxCommand(_ command: OutboxCommandRecord) -> DBusValue {
        dictionary([
            "id": .string(command.id.uuidString.lowercased()),
            "entity": .string(command.entityId),
            "kind": .string("\(command.entityType.rawValue).\(command.operation.rawValue)"),
            "status": .string(statusNames[command.status] ?? command.status.rawValue),
            "attempts": .uint32(UInt32(clamping: command.attempts)),
            "created_at": .int64(command.createdAt),
            "next_attempt_at": .int64(command.nextAttemptAt),
            "last_error": command.lastError.map { .string($0) },
        ])
    }

    static func conflict(serial: String, _ conflict: SettingConflict) -> DBusValue {
        dictionary([
            "serial": .string(serial),
            "key": .byte(conflict.key),
            "name": .string(SettingFields.name(of: conflict.key)),
            "mine": SettingFields.value(key: conflict.key, bytes: conflict.desired),
            "theirs": SettingFields.value(key: conflict.key, bytes: conflict.reported),
            "base": SettingFields.value(key: conflict.key, bytes: conflict.base),
            "detected_at": .int64(conflict.detectedAt),
        ])
    }
}
