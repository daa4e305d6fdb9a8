import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

/// Every rule of `HealthUploadValidation` once, through the endpoint: the item is `rejected` with a reason naming
/// its field, and the valid item beside it in the same request is applied.
@Suite("health upload: each broken rule rejects its item, naming the field")
struct HealthValidationTests {
    typealias Mutation = (field: String, change: @Sendable (inout HealthSampleUpload) -> Void)

    static let sampleMutations: [Mutation] = [
        ("uid", { $0.uid = "not-a-uuid" }),
        ("dedup_key", { $0.dedupKey = "" }),
        ("dedup_key", { $0.dedupKey = String(repeating: "k", count: 513) }),
        ("dedup_key", { $0.dedupKey = "a\u{0}b" }),
        ("device.uid", { $0.device.uid = "" }),
        ("characteristic", { $0.characteristic = "00002A35-0000-1000-8000-00805F9B34FB" }),
        ("characteristic", { $0.characteristic = "2a35" }),
        ("metric_code", { $0.metricCode = 0 }),
        ("metric_code", { $0.metricCode = 4_294_967_296 }),
        ("occurrence", { $0.occurrence = 256 }),
        ("occurrence", { $0.occurrence = -1 }),
        ("value_status", { $0.valueStatus = "infinity" }),
        // number ⇔ mantissa and exponent ⇔ canonical value
        ("reported.mantissa", { $0.reported.mantissa = nil }),
        ("reported.mantissa", { $0.reported.exponent = nil }),
        ("canonical.value", { $0.canonical.value = nil }),
        ("reported.mantissa", { $0.valueStatus = "nan" }),
        ("canonical.value", {
            $0.valueStatus = "nan"
            $0.reported.mantissa = nil
            $0.reported.exponent = nil
        }),
        ("canonical.value", { $0.canonical.value = "1.2e3" }),
        ("canonical.value", { $0.canonical.value = "120." }),
        ("canonical.value", { $0.canonical.value = ".5" }),
        ("canonical.value", { $0.canonical.value = "+1" }),
        ("canonical.value", { $0.canonical.value = String(repeating: "9", count: 81) }),
        ("reported.exponent", { $0.reported.exponent = 128 }),
        ("reported.exponent", { $0.reported.exponent = -129 }),
        ("reported.unit", { $0.reported.unit = "" }),
        ("canonical.unit", { $0.canonical.unit = String(repeating: "g", count: 65) }),
        ("time_basis", { $0.timeBasis = "gps" }),
        ("device_time", { $0.deviceTime = nil }),
        ("lane", { $0.lane = "warm" }),
        ("user_index", { $0.userIndex = 256 }),
        ("record_sequence", { $0.recordSequence = -1 }),
        ("epoch", { $0.epoch = -1 }),
        ("raw_bytes", { $0.rawBytes = nil }),
        ("raw_bytes", { $0.rawBytes = "00780050005D00" }),
        ("raw_bytes", { $0.rawBytes = "0" }),
        ("raw_bytes", { $0.rawBytes = "" }),
        ("raw_bytes", { $0.rawBytes = String(repeating: "ab", count: 1025) }),
        ("parser_version", { $0.parserVersion = nil }),
        ("parser_version", { $0.parserVersion = 0 }),
        ("replaces", { $0.replaces = "nope" }),
        ("replaces", { $0.replaces = $0.uid }),
    ]

    @Test("every sample rule", arguments: ServerBackend.allCases)
    func sampleRules(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let broken = Self.sampleMutations.enumerated().map { index, mutation in
                var sample = HealthFixtures.sample(effectiveAt: Int64(index))
                mutation.change(&sample)
                return sample
            }
            let valid = HealthFixtures.sample(effectiveAt: -1)
            let results = try await api.uploaded(broken + [valid])
            #expect(results.count == broken.count + 1)
            for (index, mutation) in Self.sampleMutations.enumerated() {
                #expect(results[index].status == .rejected, "\(mutation.field) #\(index)")
                #expect(results[index].reason?.hasPrefix(mutation.field) == true, "\(mutation.field) #\(index): \(results[index].reason ?? "no reason")")
                #expect(results[index].uid == broken[index].uid)
            }
            #expect(results.last?.status == .applied, "the valid sample beside them is stored")
            #expect(try await server.store.healthSamples(tenant: "tenant-a").map(\.sample.uid) == [valid.uid])
        }
    }

    @Test("what the rules allow: a correction without raw bytes, special values, the edges of each range")
    func sampleEdgesAccepted() async throws {
        try await withServer(.sqlite) { server in
            let api = try await server.api()
            var samples: [HealthSampleUpload] = []
            var correction = HealthFixtures.sample(effectiveAt: 1)
            correction.lane = "change"
            correction.rawBytes = nil
            correction.parserVersion = nil
            samples.append(correction)
            for (index, status) in ["nan", "nres", "positive-infinity", "negative-infinity", "reserved"].enumerated() {
                var special = HealthFixtures.sample(effectiveAt: Int64(10 + index))
                special.valueStatus = status
                special.reported = .init(mantissa: nil, exponent: nil, unit: "mm[Hg]")
                special.canonical = .init(value: nil, unit: "mm[Hg]")
                samples.append(special)
            }
            var edges = HealthFixtures.sample(mantissa: Int64.min, exponent: 127, value: "-0.5", effectiveAt: 20)
            edges.metricCode = 4_294_967_295
            edges.occurrence = 255
            edges.userIndex = 255
            edges.timeBasis = "receipt"
            edges.deviceTime = nil
            edges.rawBytes = String(repeating: "ab", count: 1024)
            edges.dedupKey = String(repeating: "é", count: 512)
            samples.append(edges)
            let results = try await api.uploaded(samples)
            #expect(results.allSatisfy { $0.status == .applied }, "\(results.compactMap(\.reason))")
        }
    }

    typealias DeletionMutation = (field: String, change: @Sendable (inout HealthDeletionUpload) -> Void)

    static let deletionMutations: [DeletionMutation] = [
        ("uid", { $0.uid = "" }),
        ("sample_uid", { $0.sampleUid = "12345" }),
        ("reason", { $0.reason = "mistake" }),
        ("requested_by", { $0.requestedBy = "device" }),
        // The pairings of the gateway's healthDeletion CHECKs.
        ("requested_by", { $0.requestedBy = "gateway" }),
        ("requested_by", {
            $0.reason = "backend"
            $0.requestedBy = "technician"
        }),
        ("requested_by", {
            $0.reason = "vanished-from-device"
            $0.requestedBy = "technician"
        }),
        ("requested_by", {
            $0.reason = "correction"
            $0.requestedBy = "gateway"
            $0.replacementSampleUid = HealthFixtures.uid()
        }),
        ("replacement_sample_uid", { $0.reason = "correction" }),
        ("replacement_sample_uid", { $0.replacementSampleUid = HealthFixtures.uid() }),
        ("replacement_sample_uid", {
            $0.reason = "correction"
            $0.replacementSampleUid = "not-a-uuid"
        }),
        ("replacement_sample_uid", {
            $0.reason = "correction"
            $0.replacementSampleUid = $0.sampleUid
        }),
        ("note", { $0.note = "" }),
        ("note", { $0.note = String(repeating: "n", count: 1001) }),
    ]

    @Test("every tombstone rule", arguments: ServerBackend.allCases)
    func deletionRules(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let broken = Self.deletionMutations.map { mutation in
                var deletion = HealthFixtures.deletion(of: HealthFixtures.uid())
                mutation.change(&deletion)
                return deletion
            }
            let valid = HealthFixtures.deletion(of: HealthFixtures.uid(), reason: "vanished-from-device", requestedBy: "gateway", note: nil)
            let results = try await api.deleted(broken + [valid])
            for (index, mutation) in Self.deletionMutations.enumerated() {
                #expect(results[index].status == .rejected, "\(mutation.field) #\(index)")
                #expect(results[index].reason?.hasPrefix(mutation.field) == true, "\(mutation.field) #\(index): \(results[index].reason ?? "no reason")")
            }
            #expect(results.last?.status == .applied)
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").map(\.deletion.uid) == [valid.uid])
        }
    }
}
