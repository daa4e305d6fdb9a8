import Foundation
import GRDB
import Testing
@testable import TetherStore
import TetherPrimitives

/// The health upload queue on a real SQLite file (docs/design/health.md, "Upload"): claims under leases, results
/// marked only under the lease that sent them, final states, and what a deletion or a correction uploads.
@Suite("Health upload queue: claim under leases, mark only what the lease still holds")
struct HealthUploadQueueTests {
    static let lease: Duration = .seconds(120)

    struct Row: Hashable {
        var state: HealthUploadState
        var requestId: String?
        var attempts: Int
        var leaseExpiresAt: Int64?
        var rejectedReason: String?
    }

    static func upload(_ database: GatewayDatabase, _ kind: HealthUploadKind, uid: String) throws -> Row? {
        try database.read { db in
            try GRDB.Row.fetchOne(db, sql: "SELECT * FROM \(kind.table) WHERE uid = ?", arguments: [uid]).map {
                Row(state: HealthUploadState(rawValue: $0["uploadState"])!, requestId: $0["uploadRequestId"], attempts: $0["uploadAttempts"],
                    leaseExpiresAt: $0["leaseExpiresAt"], rejectedReason: $0["rejectedReason"])
            }
        }
    }

    static func uids(_ outcome: HealthIngestOutcome) -> [String] {
        outcome.samples.compactMap { if case .stored(let uid) = $0 { uid } else { nil } }
    }

    @Test("a claim leases the oldest due samples up to its limit under one fresh request id; a second claim takes only the rest")
    func claimOldestFirstUnderOneLease() throws {
        var fixture = try HealthFixture()
        let stored = Self.uids(try fixture.ingest((1...5).map { glucoseSample(sequence: $0, lane: .cold) }))
        let queue = HealthUploadQueue(database: fixture.database, leaseDuration: Self.lease)
        var random = SplitMix64(seed: 3)
        let first = try #require(try queue.claimSamples(limit: 3, now: simulationStart, using: &random))
        #expect(first.items.map(\.record.uid) == Array(stored[0..<3]))
        #expect(first.expiresAt == simulationStart.advanced(by: Self.lease))
        #expect(UUIDv7.unixMilliseconds(of: try #require(UUID(uuidString: first.requestId))) == simulationStart.nanoseconds / 1_000_000)
        for uid in stored[0..<3] {
            #expect(try Self.upload(fixture.database, .samples, uid: uid) == Row(
                state: .leased, requestId: first.requestId, attempts: 1, leaseExpiresAt: first.expiresAt.nanoseconds, rejectedReason: nil))
        }
        // Before the lease expires, a claim takes only what is not leased.
        let second = try #require(try queue.claimSamples(limit: 10, now: simulationStart.plus(milliseconds: 1000), using: &random))
        #expect(second.items.map(\.record.uid) == Array(stored[3...]))
        #expect(second.requestId != first.requestId)
        #expect(try queue.claimSamples(limit: 10, now: simulationStart.plus(milliseconds: 2000), using: &random) == nil)
        #expect(try queue.backlog().samples == [.leased: 5])
    }

    @Test("an expired lease is claimed again; the old upload's late results then mark nothing, the new upload's do")
    func expiredLeaseComesBackAndOldResultsDoNotMark() throws {
        var fixture = try HealthFixture()
        let stored = Self.uids(try fixture.ingest((1...3).map { glucoseSample(sequence: $0, lane: .cold) }))
        let queue = HealthUploadQueue(database: fixture.database, leaseDuration: Self.lease)
        var random = SplitMix64(seed: 4)
        let old = try #require(try queue.claimSamples(now: simulationStart, using: &random))
        // At the expiry instant exactly, the lease has run out (leaseExpiresAt <= now).
        #expect(try queue.claimSamples(now: old.expiresAt.advanced(by: .nanoseconds(-1)), using: &random) == nil)
        let new = try #require(try queue.claimSamples(now: old.expiresAt, using: &random))
        #expect(new.items.map(\.record.uid) == stored)
        #expect(try Self.upload(fixture.database, .samples, uid: stored[0])?.attempts == 2, "the expired lease counted as an attempt")

        // The first upload's answer arrives late: it must not mark rows the second one holds.
        let late = try queue.mark(.samples, requestId: old.requestId, verdicts: stored.map { ($0, .rejected(reason: "late")) })
        #expect(late.notHeld == 3 && late.uploaded == 0 && late.rejected == 0)
        #expect(try queue.fail(.samples, requestId: old.requestId) == 0)
        #expect(try Self.upload(fixture.database, .samples, uid: stored[0])?.state == .leased)

        let marks = try queue.mark(.samples, requestId: new.requestId, verdicts: stored.map { ($0, .uploaded) })
        #expect(marks.uploaded == 3 && marks.notHeld == 0)
        #expect(try Self.upload(fixture.database, .samples, uid: stored[1]) == Row(
            state: .uploaded, requestId: new.requestId, attempts: 2, leaseExpiresAt: nil, rejectedReason: nil))
        #expect(try queue.claimSamples(now: new.expiresAt.advanced(by: .seconds(3600)), using: &random) == nil, "uploaded is final")
        #expect(try queue.backlog().samples.isEmpty)
    }

    @Test("a rejected sample keeps the server's reason and is never claimed again; an uploaded one neither")
    func rejectedKeepsReason() throws {
        var fixture = try HealthFixture()
        let stored = Self.uids(try fixture.ingest((1...2).map { glucoseSample(sequence: $0, lane: .cold) }))
        let queue = HealthUploadQueue(database: fixture.database, leaseDuration: Self.lease)
        var random = SplitMix64(seed: 5)
        let lease = try #require(try queue.claimSamples(now: simulationStart, using: &random))
        let marks = try queue.mark(.samples, requestId: lease.requestId, verdicts: [
            (stored[0], .rejected(reason: "effective_at is more than a day in the future")), (stored[1], .uploaded),
        ])
        #expect(marks.rejected == 1 && marks.uploaded == 1)
        #expect(try Self.upload(fixture.database, .samples, uid: stored[0]) == Row(
            state: .rejected, requestId: lease.requestId, attempts: 1, leaseExpiresAt: nil,
            rejectedReason: "effective_at is more than a day in the future"))
        // The read side a technician uses shows it.
        let listed = try #require(try fixture.store.sample(uid: stored[0]))
        #expect(listed.upload.state == .rejected && listed.upload.rejectedReason == "effective_at is more than a day in the future")
        #expect(try queue.claimSamples(now: simulationStart.advanced(by: .seconds(86_400)), using: &random) == nil)
        #expect(try queue.backlog().samples == [.rejected: 1])
        // A rejection without a reason still needs one in the table.
        let more = Self.uids(try fixture.ingest([glucoseSample(sequence: 3, lane: .cold)]))
        let next = try #require(try queue.claimSamples(now: simulationStart, using: &random))
        try queue.mark(.samples, requestId: next.requestId, verdicts: [(more[0], .rejected(reason: ""))])
        #expect(try Self.upload(fixture.database, .samples, uid: more[0])?.rejectedReason == "rejected by the server without a reason")
    }

    @Test("a failed request makes its rows failed and claimable again, each attempt counted")
    func failedCountsAttempts() throws {
        var fixture = try HealthFixture()
        let stored = Self.uids(try fixture.ingest((1...2).map { glucoseSample(sequence: $0, lane: .cold) }))
        let queue = HealthUploadQueue(database: fixture.database, leaseDuration: Self.lease)
        var random = SplitMix64(seed: 6)
        for attempt in 1...3 {
            let lease = try #require(try queue.claimSamples(now: simulationStart.plus(milliseconds: Int64(attempt)), using: &random))
            #expect(lease.items.map(\.record.uid) == stored)
            #expect(try queue.fail(.samples, requestId: lease.requestId) == 2)
            #expect(try Self.upload(fixture.database, .samples, uid: stored[0]) == Row(
                state: .failed, requestId: lease.requestId, attempts: attempt, leaseExpiresAt: nil, rejectedReason: nil))
        }
        #expect(try queue.backlog().samples == [.failed: 2])
    }

    @Test("a sample deleted before it was uploaded is still uploaded, and its tombstone after it")
    func deletedBeforeUpload() throws {
        var fixture = try HealthFixture()
        let stored = Self.uids(try fixture.ingest((1...2).map { glucoseSample(sequence: $0, lane: .cold) }))
        let deletion = try fixture.apply(.deletedByTechnician(sampleUid: stored[0], note: "wrong patient"))
        let queue = HealthUploadQueue(database: fixture.database, leaseDuration: Self.lease)
        var random = SplitMix64(seed: 7)
        let samples = try #require(try queue.claimSamples(now: simulationStart, using: &random))
        #expect(samples.items.map(\.record.uid) == stored)
        #expect(samples.items[0].record.deletedAt != nil)
        let tombstones = try #require(try queue.claimDeletions(now: simulationStart, using: &random))
        #expect(tombstones.items.map(\.uid) == [deletion.deletionUid])
        #expect(tombstones.items[0].sampleUid == stored[0] && tombstones.items[0].reason == .technician && tombstones.items[0].note == "wrong patient")
        #expect(try queue.mark(.deletions, requestId: tombstones.requestId, verdicts: [(deletion.deletionUid, .uploaded)]).uploaded == 1)
        #expect(try Self.upload(fixture.database, .deletions, uid: deletion.deletionUid)?.state == .uploaded)
        #expect(try queue.backlog().deletions.isEmpty)
        #expect(try queue.backlog().samples == [.leased: 2])
    }

    @Test("a correction's replacement carries the uid it replaces; the tombstone names the replacement; the device comes from the registry")
    func correctionCarriesReplaces() throws {
        var fixture = try HealthFixture()
        var random = SplitMix64(seed: 8)
        try PeripheralRegistry(database: fixture.database).recordDeviceInformation(
            DeviceInformation(manufacturerName: "Acme Medical", modelNumber: "GM-200", serialNumber: "SN-0042"),
            identityAddress: "C4:00:00:00:00:01", at: simulationStart, using: &random)
        let original = Self.uids(try fixture.ingest([glucoseSample(sequence: 1, lane: .cold, milligramsPerDecilitre: 100)]))[0]
        let change = try fixture.apply(.corrected(
            sampleUid: original, replacement: glucoseSample(sequence: 1, lane: .change, milligramsPerDecilitre: 110), by: .technician, note: "meter recalibrated"))
        let replacement = try #require(change.replacementUid)
        let queue = HealthUploadQueue(database: fixture.database, leaseDuration: Self.lease)
        let samples = try #require(try queue.claimSamples(now: simulationStart, using: &random))
        #expect(samples.items.map(\.record.uid) == [original, replacement])
        #expect(samples.items.map(\.replacesUid) == [nil, original])
        #expect(samples.items[0].device == HealthSampleDevice(
            uid: fixture.peripheralUid, identityAddress: "C4:00:00:00:00:01", manufacturerName: "Acme Medical", modelNumber: "GM-200", serialNumber: "SN-0042"))
        let tombstone = try #require(try queue.claimDeletions(now: simulationStart, using: &random)?.items.first)
        #expect(tombstone.uid == change.deletionUid && tombstone.sampleUid == original)
        #expect(tombstone.reason == .correction && tombstone.replacementSampleUid == replacement && tombstone.requestedBy == "technician")
    }

    @Test("the claim reads the queue through its partial index, not the table")
    func claimUsesTheUploadIndex() throws {
        let fixture = try HealthFixture()
        for kind in HealthUploadKind.allCases {
            let details = try fixture.database.read { db in
                try GRDB.Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + HealthUploadQueue.claimSQL(kind), arguments: ["request": "x", "expires": 0, "now": 0, "limit": 1])
                    .map { $0["detail"] as String }
            }
            #expect(details.filter { $0.contains(kind.index) }.count == 3, "\(details)")
            #expect(!details.contains { $0.hasPrefix("SCAN \(kind.table)") && !$0.contains("INDEX") }, "\(details)")
        }
    }
}
