import Foundation
import SyncContract
import TetherPrimitives

/// A health sample as the server keeps it: the sample as uploaded (uids in lowercase), when it was deleted (its
/// tombstone's `requested_at`, as on the gateway), which gateway sent it and when the server stored it.
public struct HealthSampleRow: Hashable, Sendable {
    public var sample: HealthSampleUpload
    /// Nanoseconds since the Unix epoch; `nil` while no tombstone names the sample.
    public var deletedAt: Int64?
    public var gateway: String
    public var storedAt: Int64

    public init(sample: HealthSampleUpload, deletedAt: Int64?, gateway: String, storedAt: Int64) {
        self.sample = sample
        self.deletedAt = deletedAt
        self.gateway = gateway
        self.storedAt = storedAt
    }
}

/// A tombstone as the server keeps it, whether or not its sample has arrived.
public struct HealthDeletionRow: Hashable, Sendable {
    public var deletion: HealthDeletionUpload
    public var gateway: String
    public var storedAt: Int64

    public init(deletion: HealthDeletionUpload, gateway: String, storedAt: Int64) {
        self.deletion = deletion
        self.gateway = gateway
        self.storedAt = storedAt
    }
}

/// The health tables as both backends read and write them (see `StoredTable`); the schema is migration v2.
/// Decimal values travel as integers (the reported mantissa and exponent) and text (the canonical value): no
/// binary floating point ever holds a medical value.
enum HealthTables {
    typealias S = HealthSampleRow

    static let sample = StoredTable<S>(
        name: "health_sample", scopedByTenant: true,
        key: [StoredColumn<S>("uid", .text) { .text($0.sample.uid) }],
        values: [
            StoredColumn<S>("dedup_key", .text) { .text($0.sample.dedupKey) },
            StoredColumn<S>("device_uid", .text) { .text($0.sample.device.uid) },
            StoredColumn<S>("device_address", .text) { StoredValue($0.sample.device.address) },
            StoredColumn<S>("device_manufacturer", .text) { StoredValue($0.sample.device.manufacturer) },
            StoredColumn<S>("device_model", .text) { StoredValue($0.sample.device.model) },
            StoredColumn<S>("device_serial", .text) { StoredValue($0.sample.device.serial) },
            StoredColumn<S>("characteristic", .text) { .text($0.sample.characteristic) },
            StoredColumn<S>("metric_code", .bigint) { StoredValue($0.sample.metricCode) },
            StoredColumn<S>("occurrence", .integer) { StoredValue($0.sample.occurrence) },
            StoredColumn<S>("value_status", .text) { .text($0.sample.valueStatus) },
            StoredColumn<S>("reported_mantissa", .bigint) { StoredValue($0.sample.reported.mantissa) },
            StoredColumn<S>("reported_exponent", .integer) { StoredValue($0.sample.reported.exponent.map(Int.init)) },
            StoredColumn<S>("reported_unit", .text) { .text($0.sample.reported.unit) },
            StoredColumn<S>("canonical_value", .text) { StoredValue($0.sample.canonical.value) },
            StoredColumn<S>("canonical_unit", .text) { .text($0.sample.canonical.unit) },
            StoredColumn<S>("effective_at", .bigint) { .integer($0.sample.effectiveAt) },
            StoredColumn<S>("device_time", .text) { StoredValue($0.sample.deviceTime) },
            StoredColumn<S>("time_basis", .text) { .text($0.sample.timeBasis) },
            StoredColumn<S>("skew_ms", .bigint) { StoredValue($0.sample.skewMilliseconds) },
            StoredColumn<S>("user_index", .integer) { StoredValue($0.sample.userIndex) },
            StoredColumn<S>("record_sequence", .bigint) { StoredValue($0.sample.recordSequence) },
            StoredColumn<S>("epoch", .bigint) { .integer($0.sample.epoch) },
            StoredColumn<S>("lane", .text) { .text($0.sample.lane) },
            StoredColumn<S>("received_at", .bigint) { .integer($0.sample.receivedAt) },
            StoredColumn<S>("raw_bytes", .bytes) { row in
                guard let hex = row.sample.rawBytes else { return .null }
                guard let bytes = hexBytes(hex) else { throw StorageCorruption(description: "health_sample.raw_bytes is not hex") }
                return .bytes(bytes)
            },
            StoredColumn<S>("parser_version", .integer) { StoredValue($0.sample.parserVersion) },
            StoredColumn<S>("replaces", .text) { StoredValue($0.sample.replaces) },
            StoredColumn<S>("deleted_at", .bigint) { StoredValue($0.deletedAt) },
            StoredColumn<S>("gateway", .text) { .text($0.gateway) },
            StoredColumn<S>("stored_at", .bigint) { .integer($0.storedAt) },
        ],
        read: { row in
            let exponent = try row.optionalInt("reported_exponent")
            let raw: String? =
                switch try row.value("raw_bytes", .bytes) {
                case .null: nil
                case .bytes(let bytes): Hex.encode(bytes)
                case let other: throw StorageCorruption(description: "health_sample.raw_bytes holds \(other)")
                }
            let sample = HealthSampleUpload(
                uid: try row.text("uid"), dedupKey: try row.text("dedup_key"),
                device: HealthDeviceReference(
                    uid: try row.text("device_uid"), address: try row.optionalText("device_address"),
                    manufacturer: try row.optionalText("device_manufacturer"), model: try row.optionalText("device_model"),
                    serial: try row.optionalText("device_serial")),
                characteristic: try row.text("characteristic"), metricCode: Int(try row.integer("metric_code")),
                occurrence: try row.int("occurrence"), valueStatus: try row.text("value_status"),
                reported: .init(
                    mantissa: try row.optionalInteger("reported_mantissa"), exponent: exponent.flatMap { Int32(exactly: $0) },
                    unit: try row.text("reported_unit")),
                canonical: .init(value: try row.optionalText("canonical_value"), unit: try row.text("canonical_unit")),
                effectiveAt: try row.integer("effective_at"), deviceTime: try row.optionalText("device_time"),
                timeBasis: try row.text("time_basis"), skewMilliseconds: try row.optionalInteger("skew_ms"),
                userIndex: try row.optionalInt("user_index"), recordSequence: try row.optionalInteger("record_sequence"),
                epoch: try row.integer("epoch"), lane: try row.text("lane"), receivedAt: try row.integer("received_at"),
                rawBytes: raw, parserVersion: try row.optionalInt("parser_version"), replaces: try row.optionalText("replaces"))
            return HealthSampleRow(
                sample: sample, deletedAt: try row.optionalInteger("deleted_at"), gateway: try row.text("gateway"),
                storedAt: try row.integer("stored_at"))
        })

    typealias D = HealthDeletionRow

    static let deletion = StoredTable<D>(
        name: "health_deletion", scopedByTenant: true,
        key: [StoredColumn<D>("uid", .text) { .text($0.deletion.uid) }],
        values: [
            StoredColumn<D>("sample_uid", .text) { .text($0.deletion.sampleUid) },
            StoredColumn<D>("reason", .text) { .text($0.deletion.reason) },
            StoredColumn<D>("requested_by", .text) { .text($0.deletion.requestedBy) },
            StoredColumn<D>("replacement_sample_uid", .text) { StoredValue($0.deletion.replacementSampleUid) },
            StoredColumn<D>("note", .text) { StoredValue($0.deletion.note) },
            StoredColumn<D>("requested_at", .bigint) { .integer($0.deletion.requestedAt) },
            StoredColumn<D>("gateway", .text) { .text($0.gateway) },
            StoredColumn<D>("stored_at", .bigint) { .integer($0.storedAt) },
        ],
        read: { row in
            HealthDeletionRow(
                deletion: HealthDeletionUpload(
                    uid: try row.text("uid"), sampleUid: try row.text("sample_uid"), reason: try row.text("reason"),
                    requestedBy: try row.text("requested_by"), replacementSampleUid: try row.optionalText("replacement_sample_uid"),
                    note: try row.optionalText("note"), requestedAt: try row.integer("requested_at")),
                gateway: try row.text("gateway"), storedAt: try row.integer("stored_at"))
        })

    /// Validated lowercase hex (HealthUploadValidation) to bytes; `nil` for anything else.
    static func hexBytes(_ hex: String) -> [UInt8]? {
        guard hex.utf8.allSatisfy({ !(UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0) }) else { return nil }
        return Hex.decode(hex)
    }
}
