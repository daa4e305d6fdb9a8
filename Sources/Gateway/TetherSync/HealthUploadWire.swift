import Foundation
import SyncContract
import TetherStore
import TetherPrimitives

/// The store's claimed rows in the wire form of docs/specs/sync-api.yaml, "Health" (`SyncContract`'s types). The
/// store keeps meaning (`HealthSampleRecord`, `HealthDeletionRecord`); only this file knows the JSON.
enum HealthUploadWire {
    static func sample(_ claim: HealthSampleClaim) -> HealthSampleUpload {
        let record = claim.record
        let sample = record.sample
        let value = sample.value
        return HealthSampleUpload(
            uid: record.uid, dedupKey: record.dedupKey,
            device: HealthDeviceReference(
                uid: claim.device.uid, address: claim.device.identityAddress, manufacturer: claim.device.manufacturerName,
                model: claim.device.modelNumber, serial: claim.device.serialNumber),
            characteristic: sample.characteristic, metricCode: sample.metricCode, occurrence: sample.occurrence,
            valueStatus: value.status.rawValue,
            reported: .init(mantissa: value.reported?.mantissa, exponent: value.reported.map { Int32($0.exponent) }, unit: value.reportedUnit),
            canonical: .init(value: value.canonical?.description, unit: value.canonicalUnit),
            effectiveAt: sample.effectiveAt.nanoseconds, deviceTime: sample.deviceTime, timeBasis: sample.timeBasis.rawValue,
            skewMilliseconds: sample.skewMilliseconds, userIndex: sample.userIndex, recordSequence: sample.recordSequence, epoch: sample.epoch,
            lane: sample.lane.rawValue, receivedAt: sample.receivedAt.nanoseconds, rawBytes: sample.rawBytes.map(hex),
            parserVersion: sample.parserVersion, replaces: claim.replacesUid)
    }

    static func deletion(_ record: HealthDeletionRecord) -> HealthDeletionUpload {
        HealthDeletionUpload(
            uid: record.uid, sampleUid: record.sampleUid, reason: record.reason.rawValue, requestedBy: record.requestedBy,
            replacementSampleUid: record.replacementSampleUid, note: record.note, requestedAt: record.requestedAt,
            sampleDedupKey: record.sampleDedupKey)
    }

    /// Lowercase hex, two digits a byte (the spec's `raw_bytes`).
    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    static func body(_ request: some Encodable) throws(SyncFailure) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(request))
        } catch {
            throw SyncFailure(.store, "encoding a health upload: \(error)")
        }
    }
}
