import DBus
import Foundation
import TetherStore

/// The `a{sv}` records of docs/control-api.md, built from store rows and the daemon's live state. A field with
/// no value is left out of the dictionary.
enum ControlRecords {
    static func dictionary(_ fields: [String: DBusValue?]) -> DBusValue {
        .variantDictionary(fields.compactMapValues { $0 })
    }

    static func list(_ records: [DBusValue]) -> DBusValue {
        .array(elementSignature: "a{sv}", records)
    }

    static func status(summary: StoreQueries.Summary, state: DaemonState.Snapshot, version: String) -> DBusValue {
        let connected = state.devices.values.filter { $0.state == "connected" }.count
        return dictionary([
            "version": .string(version),
            "started_at": .int64(state.startedAt),
            "bluez_available": .bool(state.bluezAvailable),
            "adapter": .string(state.adapter),
            "scanning": .bool(state.scanning),
            "devices_known": .uint32(UInt32(clamping: summary.devicesKnown)),
            "devices_connected": .uint32(UInt32(clamping: connected)),
            "outbox_pending": .uint32(UInt32(clamping: summary.outbox.pending)),
            "outbox_in_flight": .uint32(UInt32(clamping: summary.outbox.inProgress)),
            "outbox_failed": .uint32(UInt32(clamping: summary.outbox.failed)),
            "outbox_conflict": .uint32(UInt32(clamping: summary.outbox.conflict)),
            "outbox_dead": .uint32(UInt32(clamping: summary.outbox.deadLetter)),
            "outbox_oldest_pending_age": summary.oldestPendingAgeNanoseconds.map { .int64($0) },
            "conflicts": .uint32(UInt32(clamping: summary.conflicts)),
            "last_sync_at": state.sync.finishedAt.map { .int64($0) },
            "last_sync_result": .string(state.sync.result),
            "last_sync_error": state.sync.error.map { .string($0) },
            "sync_clock_skew": state.sync.clockSkewNanoseconds.map { .int64($0) },
            "database_bytes": .int64(summary.databaseBytes),
            "storage": .string(summary.storageState),
            "events_stored": .uint64(UInt64(clamping: summary.eventsStored)),
        ])
    }

    static func device(record: DeviceRecord?, live: DaemonState.LiveDevice?, eventsStored: Int?) -> DBusValue {
        let address = record?.address ?? live?.address
        return dictionary([
            "serial": (record?.serial ?? live?.serial).map { .string($0) },
            "address": address.map { .string($0) },
            "name": live?.name.map { .string($0) },
            "paired": .bool(record?.pairingState == .paired),
            "pairing_state": record.map { .string($0.pairingState.rawValue) },
            "state": .string(live?.state ?? "idle"),
            "attempts": .uint32(live?.attempts ?? 0),
            "last_error": live?.lastError.map { .string($0) },
            "last_seen_at": record.map { .int64($0.lastSeenAt) },
            "rssi": live?.rssi.map { .int16($0) },
            "firmware": record?.firmwareVersion.map { .string($0) },
            "battery_percent": live?.batteryPercent.map { .byte($0) },
            "events_stored": eventsStored.map { .uint64(UInt64(clamping: $0)) },
            "frames_received": .uint64(live?.framesReceived ?? 0),
            "frames_sent": .uint64(live?.framesSent ?? 0),
            "notify_method": live?.notifyMethod.map { .string($0) },
            "mtu": live?.mtu.map { .uint16($0) },
        ])
    }

    static func scanResult(_ result: ScanResult) -> DBusValue {
        dictionary([
            "address": .string(result.address),
            "name": result.name.map { .string($0) },
            "rssi": result.rssi.map { .int16($0) },
            "known": .bool(result.known),
            "paired": .bool(result.paired),
            "last_seen_at": .int64(result.lastSeenAt),
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

    /// The store's statuses under the control API's names (docs/control-api.md, "Outbox command").
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
