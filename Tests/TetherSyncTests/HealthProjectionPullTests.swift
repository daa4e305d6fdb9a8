import Foundation
import GRDB
import Synchronization
import SyncContract
import Testing
import TetherPrimitives
import TetherServer
@testable import TetherStore
@testable import TetherSync
import TetherSyncTesting

extension SyncSetup {
    /// A projection puller on the gateway's database with its own HTTP client, shut down after `body`.
    func withPuller<T>(faults: HealthProjectionFaults = HealthProjectionFaults(), _ body: (inout HealthProjectionPuller) async throws -> T) async throws -> T {
        let client = try SyncHTTPClient(configuration: configuration())
        var puller = HealthProjectionPuller(
            projections: HealthProjections(database: gateway.database, claimDuration: .seconds(120)), client: client, now: clock.read, seed: 3,
            faults: faults, logger: quietLogger)
        do {
            let result = try await body(&puller)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    var projections: HealthProjections { HealthProjections(database: gateway.database) }

    /// Ingests glucose readings of `values` mg/dL with record sequences from `offset`, one a minute from
    /// `GatewayFixture.start` + `offset` minutes, or from `effectiveFrom` when given (a record taken earlier).
    @discardableResult
    func ingest(_ health: HealthGateway, values: [Int64], offset: Int64 = 0, effectiveFrom: Timestamp? = nil) throws -> [String] {
        var random = SplitMix64(seed: UInt64(offset + 100))
        let samples = values.enumerated().map { index, value in
            var sample = HealthGateway.sample(sequence: offset + Int64(index), milligramsPerDecilitre: value)
            if let effectiveFrom { sample.effectiveAt = effectiveFrom.advanced(by: .seconds(Int64(index) * 60)) }
            return sample
        }
        let outcome = try health.store.ingest(HealthIngestBatch(peripheralUid: health.peripheralUid, samples: samples), at: GatewayFixture.start, using: &random)
        return outcome.samples.compactMap { if case .stored(let uid) = $0 { uid } else { nil } }
    }
}

/// The gateway's side of the projections (docs/design/health.md, "Projections"): dirty keys from the upload, the
/// pull, freshness. Against the real server; expected figures worked by hand from the values ingested.
@Suite("health projections: dirty keys, the pull and freshness on the gateway")
struct HealthProjectionPullTests {
    /// GatewayFixture.start is 2026-11-01T08:00:00Z; the glucose samples are MDC 160368 without a user index.
    static func key(_ health: HealthGateway, day: String = "2026-11-01") -> HealthProjections.Key {
        .init(deviceUid: health.peripheralUid, userIndex: nil, metricCode: 160_368, day: day)
    }

    @Test("uploaded samples make their keys stale; the pull makes them fresh with the server's rollup", arguments: ServerBackend.allCases)
    func uploadThenPull(_ backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            // 90, 110, 100 on 2026-11-01 from 08:00; 120 at minute 960 = 2026-11-02T00:00Z, the next day.
            try setup.ingest(health, values: [90, 110, 100])
            try setup.ingest(health, values: [120], offset: 960)
            #expect(try setup.projections.entries().isEmpty, "no key before the server has the samples")
            _ = try await setup.withUploader { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            let dirty = try setup.projections.entries()
            #expect(dirty.map(\.key) == [Self.key(health), Self.key(health, day: "2026-11-02")])
            #expect(dirty.allSatisfy { $0.freshness == .stale && $0.rollup == nil })

            let report = try await setup.withPuller { puller in await puller.run() }
            #expect((report.requests, report.keys, report.fresh, report.failure) == (1, 2, 2, nil))
            let entries = try setup.projections.entries()
            #expect(entries.map(\.freshness) == [.fresh, .fresh])
            let first = try #require(entries.first?.rollup)
            #expect((first.count, first.min, first.max, first.sum, first.mean, first.unit) == (3, "90", "110", "300", "100.0000", "mg/dL"))
            #expect((first.lastValue, first.lastEffectiveAt) == ("100", GatewayFixture.start.advanced(by: .seconds(120)).nanoseconds))
            #expect(entries.last?.rollup?.count == 1)
            // Nothing stale: the next pull asks nothing.
            #expect(try await setup.withPuller { puller in await puller.run() }.requests == 0)
        }
    }

    @Test("a late sample and a deletion make the day stale again, and the pull brings the new rollup", arguments: ServerBackend.allCases)
    func lateAndDeleted(_ backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try setup.ingest(health, values: [90, 110])
            _ = try await setup.withUploader { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            _ = try await setup.withPuller { puller in await puller.run() }
            let before = try #require(try setup.projections.entries().first?.rollup)
            #expect((before.count, before.mean) == (2, "100.0000"))

            // A late record: taken at 07:59 the same day, read from the device after the others were uploaded.
            try setup.ingest(health, values: [50], offset: 30, effectiveFrom: GatewayFixture.start.advanced(by: .seconds(-60)))
            _ = try await setup.withUploader { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            #expect(try setup.projections.entries().map(\.freshness) == [.stale], "the upload touched the day")
            _ = try await setup.withPuller { puller in await puller.run() }
            let late = try #require(try setup.projections.entries().first)
            #expect(late.freshness == .fresh)
            #expect((late.rollup?.count, late.rollup?.min, late.rollup?.mean) == (3, "50", "83.3333"))
            #expect(late.rollup?.lastValue == "110", "the late record is earlier by effective time: `last` stays")
            #expect(late.rollup?.revision != before.revision)

            // A technician deletes the 110: its tombstone's upload touches the day.
            _ = try health.apply(.deletedByTechnician(sampleUid: uids[1], note: "wrong patient"))
            _ = try await setup.withUploader { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            #expect(try setup.projections.entries().map(\.freshness) == [.stale])
            _ = try await setup.withPuller { puller in await puller.run() }
            let deleted = try #require(try setup.projections.entries().first)
            #expect(deleted.freshness == .fresh)
            #expect((deleted.rollup?.count, deleted.rollup?.max, deleted.rollup?.sum) == (2, "90", "140"))
        }
    }

    @Test("a key touched while its pull is computing stays stale; the next pull makes it fresh")
    func touchedWhileComputing() async throws {
        try await withSync(.sqlite) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            try setup.ingest(health, values: [90])
            _ = try await setup.withUploader { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            let database = setup.gateway.database
            let touches = Mutex(0)
            // An upload acknowledged between the claim and the answer touches the key (as HealthUploadQueue.mark does).
            let faults = HealthProjectionFaults(afterClaim: { _ in
                touches.withLock { $0 += 1 }
                _ = try? database.write { db in
                    try HealthProjections.markStale(sampleIdSQL: "SELECT MIN(id) FROM healthSample", arguments: [], db)
                }
            })
            let report = try await setup.withPuller(faults: faults) { puller in await puller.run() }
            #expect(touches.withLock { $0 } >= 1)
            #expect(report.touchedMeanwhile >= 1)
            #expect(report.fresh == 0, "every answer was computed before a touch")
            let entry = try #require(try setup.projections.entries().first)
            #expect(entry.freshness == .stale)
            let next = try await setup.withPuller { puller in await puller.run() }
            #expect(next.fresh == 1)
            #expect(try setup.projections.entries().first?.freshness == .fresh)
        }
    }

    @Test("a pull killed after its answer leaves the keys computing until the claim expires, then they are pulled")
    func killedPull() async throws {
        try await withSync(.sqlite) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            try setup.ingest(health, values: [90, 91])
            _ = try await setup.withUploader { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            let killed = try await setup.withPuller(faults: HealthProjectionFaults(abandonAfterAnswer: { _ in true })) { puller in await puller.run() }
            #expect(killed.requests == 1)
            #expect(try setup.projections.entries().map(\.freshness) == [.computing])
            // A restarted gateway: the claim is still running, nothing is claimable yet.
            #expect(try await setup.withPuller { puller in await puller.run() }.requests == 0)
            setup.clock.advance(by: .seconds(121))
            let resumed = try await setup.withPuller { puller in await puller.run() }
            #expect((resumed.requests, resumed.fresh) == (1, 1))
            #expect(try setup.projections.entries().first?.rollup?.count == 2)
        }
    }

    @Test("a failed pull gives its keys back stale, claimable at once")
    func failedPull() async throws {
        try await withSync(.sqlite) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            try setup.ingest(health, values: [90])
            _ = try await setup.withUploader { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            setup.server.faults.enqueue(.status(503, retryAfterSeconds: 1))
            let failed = try await setup.withPuller { puller in await puller.run() }
            #expect(failed.failure != nil)
            #expect(try setup.projections.entries().map(\.freshness) == [.stale])
            #expect(try await setup.withPuller { puller in await puller.run() }.fresh == 1)
        }
    }

    @Test("the gateway's UTC day of an instant is the contract's HealthProjectionDay, at the edges")
    func daysAgree() throws {
        let database = try GatewayDatabase.inMemory()
        let instants: [Int64] = [
            0, -1, 1, 86_399_999_999_999, 86_400_000_000_000, -86_400_000_000_000, -86_400_000_000_001, 1_793_491_199_999_999_999,
            1_793_491_200_000_000_000, 951_782_400_000_000_000 /* 2000-02-29 */, 4_102_444_800_000_000_000 /* 2100-01-01 */,
        ]
        for instant in instants {
            let day = try database.read { db in
                try String.fetchOne(db, sql: "SELECT \(HealthProjections.daySQL) FROM (SELECT ? AS effectiveAt) s", arguments: [instant])
            }
            #expect(day == HealthProjectionDay(containing: instant).text, "\(instant)")
        }
    }

    @Test("an answer that does not name the keys asked, in order, is refused whole")
    func answerMustMatch() {
        let asked = [HealthProjections.Key(deviceUid: "p", userIndex: nil, metricCode: 1, day: "2026-11-01")]
        func rollup(_ day: String) -> HealthRollup {
            HealthRollup(
                key: .init(deviceUid: "p", userIndex: nil, metricCode: 1, day: day), count: 0, specialCount: 0, otherUnitCount: 0, unit: nil,
                min: nil, max: nil, sum: nil, mean: nil, last: nil, revision: String(repeating: "0", count: 32), computedAt: 0)
        }
        #expect(throws: SyncFailure.self) { try HealthProjectionPuller.match(asked: asked, answered: []) }
        #expect(throws: SyncFailure.self) { try HealthProjectionPuller.match(asked: asked, answered: [rollup("2026-11-02")]) }
        #expect((try? HealthProjectionPuller.match(asked: asked, answered: [rollup("2026-11-01")]))?.count == 1)
    }
}
