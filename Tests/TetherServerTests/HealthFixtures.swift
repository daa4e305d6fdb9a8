import Foundation
import SyncContract

/// Health samples and tombstones as a gateway would upload them.
enum HealthFixtures {
    static func uid() -> String { UUID().uuidString.lowercased() }

    /// A blood pressure reading's systolic value: MDC_PRESS_BLD_NONINV_SYS (IEEE 11073-10101 partition 2, term
    /// 18949: 2 << 16 | 18949 = 150021), from the Blood Pressure Measurement characteristic (0x2A35). The raw bytes
    /// are BLS v1.1.1 §3.1's layout: flags 0x00 (mmHg, no time stamp), systolic, diastolic and mean arterial
    /// pressure as SFLOATs 120, 80 and 93 (IEEE 11073-20601 Annex F.8: exponent 0, mantissa in the low 12 bits).
    static func sample(
        uid: String = uid(), dedupKey: String? = nil, deviceUID: String = "periph-1", mantissa: Int64 = 120, exponent: Int32 = 0,
        value: String = "120", effectiveAt: Int64 = 1_793_520_000_000_000_000
    ) -> HealthSampleUpload {
        HealthSampleUpload(
            uid: uid, dedupKey: dedupKey ?? "bls/\(deviceUID)/\(effectiveAt)/150021/0",
            device: HealthDeviceReference(uid: deviceUID, address: "C0:11:22:33:44:55", manufacturer: "Example", model: "BP-1", serial: "SN-7"),
            characteristic: "00002a35-0000-1000-8000-00805f9b34fb", metricCode: 150021, occurrence: 0, valueStatus: "number",
            reported: .init(mantissa: mantissa, exponent: exponent, unit: "mm[Hg]"), canonical: .init(value: value, unit: "mm[Hg]"),
            effectiveAt: effectiveAt, deviceTime: "2026-11-01T08:00:00", timeBasis: "clock-set-by-gateway", skewMilliseconds: -250,
            userIndex: 1, recordSequence: 42, epoch: 0, lane: "cold", receivedAt: effectiveAt + 5_000_000_000,
            rawBytes: "00780050005d00", parserVersion: 1, replaces: nil)
    }

    static func deletion(
        uid: String = uid(), of sampleUID: String, reason: String = "technician", requestedBy: String = "technician",
        replacement: String? = nil, note: String? = "entered on the wrong patient", requestedAt: Int64 = 1_793_600_000_000_000_000
    ) -> HealthDeletionUpload {
        HealthDeletionUpload(
            uid: uid, sampleUid: sampleUID, reason: reason, requestedBy: requestedBy, replacementSampleUid: replacement, note: note,
            requestedAt: requestedAt)
    }
}

extension API {
    func upload(_ samples: [HealthSampleUpload]) async throws -> Answer {
        try await send(.POST, HealthUpload.samplesPath, json: try JSONEncoder().encode(HealthSamplesRequest(uploadRequestId: HealthFixtures.uid(), samples: samples)))
    }

    func delete(_ deletions: [HealthDeletionUpload]) async throws -> Answer {
        try await send(
            .POST, HealthUpload.deletionsPath, json: try JSONEncoder().encode(HealthDeletionsRequest(uploadRequestId: HealthFixtures.uid(), deletions: deletions)))
    }

    /// The results of an upload that must be answered 200.
    func uploaded(_ samples: [HealthSampleUpload]) async throws -> [HealthUploadResult] {
        let answer = try await upload(samples)
        guard answer.status == 200 else { throw UnexpectedAnswer(status: answer.status, body: answer.text) }
        return try answer.decode(HealthUploadResponse.self).results
    }

    func deleted(_ deletions: [HealthDeletionUpload]) async throws -> [HealthUploadResult] {
        let answer = try await delete(deletions)
        guard answer.status == 200 else { throw UnexpectedAnswer(status: answer.status, body: answer.text) }
        return try answer.decode(HealthUploadResponse.self).results
    }

    struct UnexpectedAnswer: Error, CustomStringConvertible {
        var status: Int
        var body: String
        var description: String { "HTTP \(status): \(body)" }
    }
}
