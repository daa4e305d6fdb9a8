import Foundation
import SyncContract
import Testing
import TetherServer
import TetherStore
@testable import TetherSync
import TetherSyncTesting
import TetherPrimitives

/// Issue 14, the change lane: "a technician's or the backend's deletion or correction of a sample ... all go through a
/// deletion queue". The backend's deletion comes down the change feed (`Change.healthSampleDeleted`), is applied with
/// the page's cursor in one store transaction (`ChangeApplier`), and its tombstone goes back up as a `duplicate`.
@Suite("health: a sample the backend deletes is deleted on the gateway that holds it, once")
struct HealthBackendDeletionSyncTests {
    static let note = "entered twice at the clinic"

    @Test("pulled, applied under the backend's uid and time, uploaded back as a duplicate; another gateway ignores it", arguments: ServerBackend.allCases)
    func deletedOnTheGateway(_ backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...3)
            let engine = try setup.engine()
            #expect(await engine.sync(trigger: .manual).health.samples.applied == 3)

            let requestedAt = setup.clock.read().nanoseconds + 1_000
            let asked = HealthDeletionUpload(
                uid: UUID().uuidString.lowercased(), sampleUid: uids[1], reason: "backend", requestedBy: "backend", replacementSampleUid: nil,
                note: Self.note, requestedAt: requestedAt)
            guard case .deleted = try await setup.server.store.deleteHealthSample(tenant: setup.tenant, tombstone: asked, storedAt: requestedAt) else {
                Issue.record("the operator's deletion was not stored"); return
            }
            let cursorBefore = try await engine.committedCursor()

            let pulled = await engine.sync(trigger: .manual)
            #expect(pulled.succeeded, "\(pulled)")
            #expect(pulled.pull.applied == 1)
            #expect(try await engine.committedCursor() > cursorBefore)
            let sample = try #require(try health.store.sample(uid: uids[1]))
            #expect(sample.deletedAt == requestedAt, "deleted at the backend's time")
            let tombstone = try #require(try health.store.deletion(uid: asked.uid), "the backend's uid")
            #expect(tombstone.sampleUid == uids[1] && tombstone.reason == .backend && tombstone.requestedBy == "backend")
            #expect(tombstone.note == Self.note && tombstone.requestedAt == requestedAt && tombstone.replacementSampleUid == nil)
            #expect(try health.store.sample(uid: uids[0])?.deletedAt == nil && health.store.sample(uid: uids[2])?.deletedAt == nil)

            // The next sync sends the tombstone back: the server holds it already.
            let echoed = await engine.sync(trigger: .manual)
            #expect(echoed.health.deletions.duplicate == 1 && echoed.health.deletions.applied == 0, "\(echoed.health)")
            #expect(try health.store.deletion(uid: asked.uid)?.upload.state == .uploaded)
            #expect(try await setup.serverDeletions().count == 1)
            // Pulled again from the start (a page the gate refused, a restored cursor): nothing happens twice.
            var random = SplitMix64(seed: 1)
            #expect(try ChangeApplier(database: setup.gateway.database).apply(.healthSampleDeleted(asked), at: setup.clock.read(), using: &random) == false)

            // Another gateway of the tenant holds none of it: the change moves its cursor and changes nothing.
            let other = try GatewayFixture(name: "other")
            defer { other.remove() }
            let token = try await setup.server.token(tenant: setup.tenant, gateway: "gw-2")
            let otherEngine = try setup.engine(database: other.database) { $0.token = BearerToken(token) }
            let report = await otherEngine.sync(trigger: .manual)
            #expect(report.succeeded && report.pull.changes == 1 && report.pull.applied == 0, "\(report)")
            #expect(try HealthStore(database: other.database).sampleCount(includeDeleted: true) == 0)
        }
    }

    /// A technician corrects a reading on the gateway while the backend deletes it, before the pull: the correction's
    /// replacement is the reading now, and the backend's deletion goes on to it, here and then on the server.
    @Test("a correction made before the pull does not keep the reading the backend deleted alive")
    func correctedBeforeThePull() async throws {
        try await withSync { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...2)
            let engine = try setup.engine()
            #expect(await engine.sync(trigger: .manual).health.samples.applied == 2)
            let asked = HealthDeletionUpload(
                uid: UUID().uuidString.lowercased(), sampleUid: uids[0], reason: "backend", requestedBy: "backend", replacementSampleUid: nil,
                note: nil, requestedAt: setup.clock.read().nanoseconds)
            guard case .deleted = try await setup.server.store.deleteHealthSample(tenant: setup.tenant, tombstone: asked, storedAt: 1) else {
                Issue.record("the operator's deletion was not stored"); return
            }
            let corrected = try health.apply(.corrected(
                sampleUid: uids[0], replacement: HealthGateway.sample(sequence: 1, lane: .change, milligramsPerDecilitre: 104), by: .technician, note: nil))
            let replacement = try #require(corrected.replacementUid)

            let pulled = await engine.sync(trigger: .manual)
            #expect(pulled.succeeded && pulled.pull.applied == 1, "\(pulled)")
            #expect(try health.store.sample(uid: replacement)?.deletedAt == asked.requestedAt, "the replacement is deleted at the backend's time")
            let tombstone = try #require(try health.store.deletion(ofSampleUid: replacement))
            #expect(tombstone.reason == .backend && tombstone.uid != asked.uid)
            #expect(try health.store.deletion(ofSampleUid: uids[0])?.reason == .correction, "the original keeps its correction")

            _ = await engine.sync(trigger: .manual)
            let onServer = try await setup.serverSamples()
            #expect(onServer.first { $0.sample.uid == replacement }?.deletedAt != nil, "the replacement is deleted on the server too")
            #expect(onServer.first { $0.sample.uid == uids[1] }?.deletedAt == nil)
        }
    }

    /// A gateway that lost its database read the meter again: its copy of the reading has another uid, which the
    /// server never stored (it answered `duplicate`), so the change finds it by the reading's dedup key.
    @Test("a gateway holding the reading under another uid deletes its copy, with a tombstone of its own the server answers duplicate")
    func foundByDedupKey() async throws {
        try await withSync { setup in
            let first = try HealthGateway(database: setup.gateway.database)
            let original = try first.ingest(1...2)
            #expect(await (try setup.engine()).sync(trigger: .manual).health.samples.applied == 2)

            let replacement = try GatewayFixture(name: "replacement")
            defer { replacement.remove() }
            let second = try HealthGateway(database: replacement.database, seed: 12)
            let reread = try second.ingest(1...2)
            #expect(reread[0] != original[0])
            let token = try await setup.server.token(tenant: setup.tenant, gateway: "gw-2")
            let engine = try setup.engine(database: replacement.database) { $0.token = BearerToken(token) }
            #expect(await engine.sync(trigger: .manual).health.samples.duplicate == 2)

            let asked = HealthDeletionUpload(
                uid: UUID().uuidString.lowercased(), sampleUid: original[0], reason: "backend", requestedBy: "backend", replacementSampleUid: nil,
                note: nil, requestedAt: setup.clock.read().nanoseconds)
            guard case .deleted = try await setup.server.store.deleteHealthSample(tenant: setup.tenant, tombstone: asked, storedAt: 1) else {
                Issue.record("the operator's deletion was not stored"); return
            }
            let pulled = await engine.sync(trigger: .manual)
            #expect(pulled.succeeded && pulled.pull.applied == 1, "\(pulled)")
            let copy = try #require(try second.store.sample(uid: reread[0]))
            #expect(copy.deletedAt == asked.requestedAt)
            #expect(try second.store.sample(uid: reread[1])?.deletedAt == nil)
            let tombstones = try second.store.deletions()
            #expect(tombstones.count == 1 && tombstones[0].uid != asked.uid && tombstones[0].reason == .backend, "a uid of its own: it names another sample uid")
            let echoed = await engine.sync(trigger: .manual)
            #expect(echoed.health.deletions.duplicate == 1, "\(echoed.health)")
            #expect(try await setup.serverDeletions().map(\.deletion.uid) == [asked.uid], "the server keeps the backend's tombstone only")
        }
    }
}
