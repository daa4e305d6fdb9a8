import DBus
import TetherGateway
import TetherPrimitives
import TetherStore

/// The health records of docs/specs/control-api.md ("Health device", "Health sample", "Health reading",
/// "Backfill result"). Values are exact decimals in text (`"120"`, `"36.8"`): D-Bus has no decimal type and a
/// double would turn 0.1 into something else. A value that is not a number (IEEE 11073-20601 Annex F.8: NaN, NRes,
/// ±INFINITY, reserved) has its `status` and no `value`.
extension ControlRecords {
    static func healthDevice(
        address: String, peripheral: PeripheralRecord?, live: HealthDeviceLive?, summary: HealthSampleSummary?,
        cursors: [HealthIngestCursorRecord]
    ) -> DBusValue {
        let fields: [String: DBusValue?] = [
            "address": .string(address),
            "peripheral_uid": peripheral.map { .string($0.uid) },
            "name": live?.name.map { .string($0) },
            "model": peripheral?.deviceInformation.modelNumber.map { .string($0) },
            "pnp_id": peripheral?.deviceInformation.pnpId.map { .string($0.description) },
            "adopted": .bool(peripheral?.adoptedAt != nil),
            "connected": .bool(live?.connected ?? false),
            "services": live?.services.map { .array(elementSignature: "s", $0.map { .string($0) }) },
            "record_access": live?.recordAccessServices.map { .array(elementSignature: "s", $0.map { .string($0) }) },
            "clock_written_at": live?.clockWrittenAt.map { .int64($0.nanoseconds) },
            "samples_stored": .uint64(UInt64(clamping: summary?.samples ?? 0)),
            "last_sample_at": summary.map { .int64($0.lastEffectiveAt) },
            "cursors": list(cursors.map(healthCursor)),
        ]
        return dictionary(fields.merging(runningImageFields(peripheral?.runningImage)) { $1 })
    }

    /// docs/specs/control-api.md, "Health projection": the key, the freshness and the last rollup fetched.
    static func healthProjection(_ entry: HealthProjections.Entry, address: String?) -> DBusValue {
        let rollup = entry.rollup
        return dictionary([
            "peripheral_uid": .string(entry.key.deviceUid),
            "address": address.map { .string($0) },
            "user_index": entry.key.userIndex.map { .uint32(UInt32(clamping: $0)) },
            "metric": HealthLiveReading.metricName(mdcCode: entry.key.metricCode).map { .string($0) },
            "metric_code": .uint32(UInt32(clamping: entry.key.metricCode)),
            "day": .string(entry.key.day),
            "freshness": .string(entry.freshness.rawValue),
            "count": rollup.map { .uint32(UInt32(clamping: $0.count)) },
            "special_count": rollup.map { .uint32(UInt32(clamping: $0.specialCount)) },
            "unit": rollup?.unit.map { .string($0) },
            "min": rollup?.min.map { .string($0) },
            "max": rollup?.max.map { .string($0) },
            "sum": rollup?.sum.map { .string($0) },
            "mean": rollup?.mean.map { .string($0) },
            "last": rollup?.lastValue.map { .string($0) },
            "last_at": rollup?.lastEffectiveAt.map { .int64($0) },
            "revision": rollup.map { .string($0.revision) },
            "computed_at": rollup.map { .int64($0.computedAt) },
            "fetched_at": entry.fetchedAt.map { .int64($0.nanoseconds) },
        ])
    }

    static func healthCursor(_ cursor: HealthIngestCursorRecord) -> DBusValue {
        dictionary([
            "characteristic": .string(shortCharacteristic(cursor.stream.characteristic)),
            "user_index": cursor.stream.userIndex.map { .uint32(UInt32(clamping: $0)) },
            "epoch": .uint32(UInt32(clamping: cursor.epoch)),
            "kind": .string(cursor.kind.rawValue),
            "position": cursor.position.map { .int64($0) },
            "start_reason": .string(cursor.startReason.rawValue),
            "updated_at": .int64(cursor.updatedAt),
        ])
    }

    static func healthSample(_ record: HealthSampleRecord, address: String?) -> DBusValue {
        let sample = record.sample
        var fields = healthValue(sample.value)
        fields.merge([
            "uid": .string(record.uid),
            "address": address.map { .string($0) },
            "peripheral_uid": .string(record.peripheralUid),
            "metric": HealthLiveReading.metricName(mdcCode: sample.metricCode).map { .string($0) },
            "metric_code": .uint32(UInt32(clamping: sample.metricCode)),
            "occurrence": .uint32(UInt32(clamping: sample.occurrence)),
            "characteristic": .string(shortCharacteristic(sample.characteristic)),
            "effective_at": .int64(sample.effectiveAt.nanoseconds),
            "device_time": sample.deviceTime.map { .string($0) },
            "time_basis": .string(sample.timeBasis.rawValue),
            "skew_ms": sample.skewMilliseconds.map { .int64($0) },
            "user_index": sample.userIndex.map { .uint32(UInt32(clamping: $0)) },
            "sequence": sample.recordSequence.map { .int64($0) },
            "epoch": .int64(sample.epoch),
            "lane": .string(sample.lane.rawValue),
            "received_at": .int64(sample.receivedAt.nanoseconds),
            "raw": sample.rawBytes.map { .string(Hex.encode($0)) },
            "upload_state": .string(record.upload.state.rawValue),
            // Why the backend refused it for good (issue 15): what a technician needs to act on a rejected sample.
            "rejected_reason": record.upload.rejectedReason.map { .string($0) },
            "deleted_at": record.deletedAt.map { .int64($0) },
        ]) { $1 }
        return dictionary(fields)
    }

    /// docs/specs/control-api.md, "Health deletion": a tombstone, what `DeleteHealthSample` and
    /// `CorrectHealthSample` answer and `ListHealthDeletions` lists.
    static func healthDeletion(_ deletion: HealthDeletionRecord, address: String?) -> DBusValue {
        dictionary([
            "uid": .string(deletion.uid),
            "sample_uid": .string(deletion.sampleUid),
            "address": address.map { .string($0) },
            "peripheral_uid": deletion.peripheralUid.map { .string($0) },
            "reason": .string(deletion.reason.rawValue),
            "requested_by": .string(deletion.requestedBy),
            "replacement_uid": deletion.replacementSampleUid.map { .string($0) },
            "note": deletion.note.map { .string($0) },
            "requested_at": .int64(deletion.requestedAt),
            "upload_state": .string(deletion.upload.state.rawValue),
            "rejected_reason": deletion.upload.rejectedReason.map { .string($0) },
        ])
    }

    static func healthReading(_ reading: HealthLiveReading) -> DBusValue {
        var fields = healthValue(reading.value)
        fields.merge([
            "address": .string(reading.address),
            "characteristic": .string(Hex.uppercase4(reading.characteristic)),
            "metric": .string(reading.metric),
            "metric_code": reading.metricCode.map { .uint32(UInt32(clamping: $0)) },
            "intermediate": .bool(reading.intermediate),
            "device_time": reading.deviceTime.map { .string($0) },
            "user_index": reading.userIndex.map { .uint32(UInt32(clamping: $0)) },
            "sequence": reading.sequenceNumber.map { .int64(Int64($0)) },
            "received_at": .int64(reading.receivedAt.nanoseconds),
        ]) { $1 }
        return dictionary(fields)
    }

    static func backfillResult(_ result: HealthBackfillResult) -> DBusValue {
        dictionary([
            "service": .string(result.service),
            "outcome": .string(result.outcome),
            "reason": result.reason.map { .string($0) },
            "records_stored": .uint32(UInt32(clamping: result.recordsStored)),
            "cursor_epoch": .uint32(result.cursorEpoch),
            "cursor_position": result.cursorLast.map { .int64(Int64($0)) },
        ])
    }

    /// `status`, `value` (a number only), `unit`, `canonical_value`, `canonical_unit`.
    static func healthValue(_ value: HealthValue) -> [String: DBusValue?] {
        [
            "status": .string(value.status.rawValue),
            "value": value.reported.map { .string($0.description) },
            "unit": .string(value.reportedUnit),
            "canonical_value": value.canonical.map { .string($0.description) },
            "canonical_unit": .string(value.canonicalUnit),
        ]
    }

    /// `2A35` for a Bluetooth base UUID (Core v5.4 Vol 3 Part B §2.5.1: 0000xxxx-0000-1000-8000-00805F9B34FB), the
    /// full UUID otherwise.
    static func shortCharacteristic(_ uuid: String) -> String {
        let lower = uuid.lowercased()
        guard lower.count == 36, lower.hasPrefix("0000"), lower.hasSuffix("-0000-1000-8000-00805f9b34fb") else { return uuid }
        return String(lower.dropFirst(4).prefix(4)).uppercased()
    }

}
