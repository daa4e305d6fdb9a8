import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

/// Issue 14, the change lane: "a technician's or the backend's deletion". An operator's deletion on the server reaches
/// every gateway of the tenant through the change feed (docs/specs/sync-api.yaml, `Change`, kind `healthSample`).
@Suite("health: the backend's deletion of a sample, stored with its feed entry")
struct HealthBackendDeletionTests {
    static let requestedAt: Int64 = 1_793_700_000_000_000_000

    static func tombstone(of sampleUID: String, note: String? = "duplicate entry, confirmed with the clinic") -> HealthDeletionUpload {
        HealthFixtures.deletion(of: sampleUID, reason: "backend", requestedBy: "backend", note: note, requestedAt: requestedAt)
    }

    @Test("the sample is marked deleted, the tombstone stored, and every gateway of the tenant pulls one healthSample change", arguments: ServerBackend.allCases)
    func deletedAndFed(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let uploader = try await server.api(gateway: "gw-1")
            let sample = HealthFixtures.sample()
            let other = HealthFixtures.sample(effectiveAt: 1_793_520_000_000_000_001)
            #expect(try await uploader.uploaded([sample, other]).map(\.status) == [.applied, .applied])

            // The operator names the sample in upper case: UUIDs are case-insensitive (RFC 9562 §4).
            var asked = Self.tombstone(of: sample.uid.uppercased())
            asked.uid = asked.uid.uppercased()
            let outcome = try await server.store.deleteHealthSample(tenant: "tenant-a", tombstone: asked, storedAt: 5)
            var expected = Self.tombstone(of: sample.uid)
            expected.uid = asked.uid.lowercased()
            expected.sampleDedupKey = sample.dedupKey
            #expect(outcome == .deleted(expected), "the tombstone in lower case, with the sample's dedup key for the gateways")

            let stored = try await server.store.healthSamples(tenant: "tenant-a")
            #expect(stored.first { $0.sample.uid == sample.uid }?.deletedAt == Self.requestedAt)
            #expect(stored.first { $0.sample.uid == other.uid }?.deletedAt == nil, "only the sample named")
            var kept = expected
            kept.sampleDedupKey = nil
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").map(\.deletion) == [kept])

            // Origin none: the gateway that uploaded the sample gets the change too, and so does another gateway.
            for gateway in ["gw-1", "gw-2"] {
                let page = try await server.api(gateway: gateway).changes().decode(ChangePage.self)
                #expect(page.changes == [.healthSampleDeleted(expected)], "\(gateway)")
                #expect(page.changes.allSatisfy { $0.problem == nil })
                #expect(page.checksum == PageChecksum.checksum(of: page.changes))
            }
            // A gateway's upload of the same tombstone (the gateway stores it under the backend's uid) is a duplicate.
            var echoed = expected
            echoed.sampleDedupKey = sample.dedupKey
            #expect(try await uploader.deleted([echoed]).map(\.status) == [.duplicate])
        }
    }

    @Test("a sample already deleted, another tenant's, unknown, or a bad note: nothing written, nothing fed", arguments: ServerBackend.allCases)
    func refusals(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api(gateway: "gw-1")
            let deletedByTechnician = HealthFixtures.sample()
            let live = HealthFixtures.sample(effectiveAt: 1_793_520_000_000_000_001)
            #expect(try await api.uploaded([deletedByTechnician, live]).map(\.status) == [.applied, .applied])
            let technician = HealthFixtures.deletion(of: deletedByTechnician.uid)
            #expect(try await api.deleted([technician]).map(\.status) == [.applied])
            let feedBefore = try await server.store.feed(tenant: "tenant-a", after: 0, limit: 100).head

            #expect(
                try await server.store.deleteHealthSample(tenant: "tenant-a", tombstone: Self.tombstone(of: deletedByTechnician.uid), storedAt: 5)
                    == .alreadyDeleted(at: technician.requestedAt))
            #expect(try await server.store.deleteHealthSample(tenant: "tenant-b", tombstone: Self.tombstone(of: live.uid), storedAt: 5) == .unknownSample)
            #expect(try await server.store.deleteHealthSample(tenant: "tenant-a", tombstone: Self.tombstone(of: HealthFixtures.uid()), storedAt: 5) == .unknownSample)
            let long = try await server.store.deleteHealthSample(
                tenant: "tenant-a", tombstone: Self.tombstone(of: live.uid, note: String(repeating: "é", count: 1001)), storedAt: 5)
            guard case .rejected(let reason) = long else { Issue.record("a 1,001-character note: \(long)"); return }
            #expect(reason.contains("note"))
            var notBackend = Self.tombstone(of: live.uid)
            notBackend.reason = "technician"
            notBackend.requestedBy = "technician"
            guard case .rejected = try await server.store.deleteHealthSample(tenant: "tenant-a", tombstone: notBackend, storedAt: 5) else {
                Issue.record("an operator's deletion is the backend's"); return
            }

            #expect(try await server.store.feed(tenant: "tenant-a", after: 0, limit: 100).head == feedBefore, "no feed entry")
            #expect(try await server.store.healthSamples(tenant: "tenant-a").first { $0.sample.uid == live.uid }?.deletedAt == nil)
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").map(\.deletion) == [technician])
        }
    }
}
