import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization
import SyncContract
import Testing
import TetherServer
import TetherStore
@testable import TetherSync
import TetherSyncTesting
import TetherPrimitives

/// A gateway's health tables, filled through the store's real write path (`HealthStore`), for the upload tests.
struct HealthGateway {
    static let glucose = "00002a18-0000-1000-8000-00805f9b34fb"
    let store: HealthStore
    let peripheralUid: String
    /// Two gateways with different seeds mint different uids for the same readings, as two real ones would.
    let seed: UInt64

    init(database: GatewayDatabase, address: String = "C4:00:00:00:00:01", seed: UInt64 = 11) throws {
        store = HealthStore(database: database)
        self.seed = seed
        var random = SplitMix64(seed: seed)
        peripheralUid = try PeripheralRegistry(database: database).register(identityAddress: address, at: GatewayFixture.start, using: &random).uid
    }

    /// A glucose record (GLS) with its sequence number: 5.5 mmol/L reported as kg/L, as the cold lane stores one.
    static func sample(sequence: Int64, lane: HealthLane = .cold, milligramsPerDecilitre: Int64 = 99) -> HealthSample {
        HealthSample(
            metricCode: 160_368,
            value: .number(HealthDecimal(mantissa: milligramsPerDecilitre, exponent: -5), unit: "kg/L", canonical: HealthDecimal(mantissa: milligramsPerDecilitre, exponent: 0), unit: "mg/dL"),
            effectiveAt: GatewayFixture.start.advanced(by: .seconds(sequence * 60)), deviceTime: "minute \(sequence)", timeBasis: .clockSetByGateway,
            recordSequence: sequence, lane: lane, characteristic: glucose,
            rawBytes: lane == .change ? nil : [0x02, UInt8(truncatingIfNeeded: sequence), UInt8(truncatingIfNeeded: sequence >> 8), 0xAB],
            parserVersion: lane == .change ? nil : 1, receivedAt: GatewayFixture.start)
    }

    /// Stores records `sequences` in batches of 500; returns their uids in order.
    @discardableResult
    func ingest(_ sequences: ClosedRange<Int64>) throws -> [String] {
        var random = SplitMix64(seed: UInt64(sequences.lowerBound) &+ seed << 32)
        var uids: [String] = []
        for chunk in Array(sequences).chunked(500) {
            let outcome = try store.ingest(
                HealthIngestBatch(peripheralUid: peripheralUid, samples: chunk.map { Self.sample(sequence: $0) }), at: GatewayFixture.start, using: &random)
            uids += outcome.samples.compactMap { if case .stored(let uid) = $0 { uid } else { nil } }
        }
        return uids
    }

    func apply(_ change: HealthChange) throws -> HealthChangeOutcome {
        // A seed of its own per sample: the tombstone and replacement uids come from it.
        var random = SplitMix64(seed: change.sampleUid.utf8.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 })
        return try store.apply(change, at: GatewayFixture.start.advanced(by: .seconds(30)), using: &random)
    }
}

extension API {
    func uploadHealth(_ request: HealthSamplesRequest) async throws -> Answer {
        var http = HTTPClientRequest(url: baseURL + SyncContract.HealthUpload.samplesPath)
        http.method = .POST
        http.headers.add(name: "Authorization", value: "Bearer \(token)")
        http.headers.add(name: "Content-Type", value: "application/json")
        http.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(request)))
        let response = try await HTTPClient.shared.execute(http, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 24)
        return Answer(status: Int(response.status.code), body: Data(body.readableBytesView))
    }
}

extension Array {
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}

extension SyncSetup {
    /// A health uploader on `database` (the gateway's by default) with its own HTTP client; the client is shut down
    /// after `body`.
    func withUploader<T>(
        database: GatewayDatabase? = nil, batchSize: Int = 100, faults: HealthUploaderFaults = HealthUploaderFaults(), seed: UInt64 = 5,
        _ body: (inout HealthUploader) async throws -> T
    ) async throws -> T {
        let configuration = configuration()
        let client = try SyncHTTPClient(configuration: configuration)
        var uploader = HealthUploader(
            queue: HealthUploadQueue(database: database ?? gateway.database, leaseDuration: .seconds(120)), client: client, batchSize: batchSize,
            backoff: configuration.backoff, now: clock.read, seed: seed, faults: faults, logger: quietLogger)
        do {
            let result = try await body(&uploader)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    func serverSamples() async throws -> [HealthSampleRow] { try await server.store.healthSamples(tenant: tenant) }
    func serverDeletions() async throws -> [HealthDeletionRow] { try await server.store.healthDeletions(tenant: tenant) }
}

/// Runs the uploader until a run sends nothing and fails nothing (at most `runs` times), moving the gateway clock an
/// hour after each run: past any backoff and lease. Returns every run's report.
func uploadUntilDone(_ uploader: inout HealthUploader, clock: GatewayClock, runs: Int = 100) async -> [HealthUploadReport] {
    var reports: [HealthUploadReport] = []
    for _ in 0..<runs {
        let report = await uploader.run()
        reports.append(report)
        clock.advance(by: .seconds(3600))
        if report.failure == nil, report.backingOffUntil == nil, report.requests == 0 { break }
    }
    return reports
}

final class AnswerCounter: Sendable {
    private let count = Mutex(0)
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
}

@Suite("Health upload: every sample and tombstone on the real server exactly once")
struct HealthUploadEndToEndTests {
    @Test("every sample reaches the server once under 500, 503, 429, dropped connections and lost answers", arguments: ServerBackend.allCases)
    func exactlyOnceUnderFaults(_ backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...1200)
            // Before handling (nothing stored) and after handling (stored, answer lost): both must end as one row.
            let faults: [Fault] = [
                .status(500), .status(503, retryAfterSeconds: 2), .dropBeforeHandling, .status(429, retryAfterSeconds: 1),
                .dropAfterHandling, .statusAfterHandling(500), .dropAfterHandling,
            ]
            for fault in faults { setup.server.faults.enqueue(fault, scope: .health) }
            let reports = try await setup.withUploader(batchSize: 100) { uploader in await uploadUntilDone(&uploader, clock: setup.clock) }
            #expect(setup.server.faults.pending == 0, "every fault met a request")
            #expect(reports.compactMap(\.failure).count == faults.count, "each fault failed one request and ended its run")
            let stored = try await setup.serverSamples()
            #expect(stored.count == 1200)
            #expect(Set(stored.map(\.sample.uid)) == Set(uids))
            let backlog = try HealthUploadQueue(database: setup.gateway.database).backlog()
            #expect(backlog.samples.isEmpty, "every row uploaded: \(backlog)")
            let applied = reports.reduce(0) { $0 + $1.samples.applied }
            let duplicates = reports.reduce(0) { $0 + $1.samples.duplicate }
            // Each row is marked once, from the one answer the gateway received for it: applied, or duplicate when the
            // server had stored it under an answer that was lost.
            #expect(applied + duplicates == 1200)
            #expect(applied == 1100)
            // A failed batch is the oldest due and goes again first: the batch stored under the first lost answer
            // is the one the two later after-handling faults hit too, and the server answered it duplicate each time.
            #expect(duplicates == 100, "the batch whose answers were lost came back as duplicates")
            #expect(reports.reduce(0) { $0 + $1.samples.failed } == 700)
        }
    }

    @Test("under random faults on a third of the requests, 2000 samples are each stored once and marked once")
    func exactlyOnceUnderRandomFaults() async throws {
        try await withSync { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...2000)
            setup.server.faults.setRandom(rate: 0.3, palette: [
                .status(500), .status(503, retryAfterSeconds: 1), .status(429, retryAfterSeconds: 1), .dropBeforeHandling, .dropAfterHandling,
                .statusAfterHandling(500), .statusAfterHandling(503),
            ])
            let reports = try await setup.withUploader(batchSize: 100) { uploader in await uploadUntilDone(&uploader, clock: setup.clock, runs: 400) }
            setup.server.faults.setRandom(rate: 0, palette: [])
            #expect(setup.server.faults.injected.count >= 3, "faults were met: \(setup.server.faults.injected.count)")
            let stored = try await setup.serverSamples()
            #expect(stored.count == 2000 && Set(stored.map(\.sample.uid)) == Set(uids))
            let answered = reports.reduce(0) { $0 + $1.samples.applied + $1.samples.duplicate }
            #expect(answered == 2000, "each row marked from exactly one answer")
            #expect(reports.reduce(0) { $0 + $1.samples.notHeld } == 0)
            #expect(try HealthUploadQueue(database: setup.gateway.database).backlog().samples.isEmpty)
        }
    }

    @Test("a server that takes fewer samples per request than the gateway sends gets smaller batches in the same run")
    func serverLimitShrinksBatches() async throws {
        try await withSync(configureServer: { $0.limits.maximumHealthSamplesPerRequest = 40 }) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...250)
            let report = try await setup.withUploader(batchSize: 100) { uploader in
                let report = await uploader.run()
                #expect(uploader.batchSize == 40)
                return report
            }
            #expect(report.failure == nil && report.samples.applied == 250 && report.samples.failed == 100)
            #expect(Set(try await setup.serverSamples().map(\.sample.uid)) == Set(uids))
        }
    }

    @Test("after a failed request the uploader backs off as a whole, at least the server's Retry-After")
    func backsOffAfterFailure() async throws {
        try await withSync { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            try health.ingest(1...10)
            setup.server.faults.enqueue(.status(429, retryAfterSeconds: 30), scope: .health)
            try await setup.withUploader { uploader in
                let failed = await uploader.run()
                #expect(failed.failure?.kind == .rateLimited && failed.samples.failed == 10)
                let waiting = await uploader.run()
                #expect(waiting.requests == 0 && waiting.backingOffUntil != nil, "no request while backing off")
                // The test configuration caps the backoff at 100 ms: the cap bounds a hostile Retry-After too.
                setup.clock.advance(by: .milliseconds(101))
                let retried = await uploader.run()
                #expect(retried.failure == nil && retried.samples.applied == 10)
            }
        }
    }

    @Test("a gateway killed with a batch leased sends it again once its lease expired, and the server keeps it once", arguments: ServerBackend.allCases)
    func killedWithBatchLeased(_ backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...300)
            // The second request reaches the server (stored) and the gateway dies before marking its answer.
            let answers = AnswerCounter()
            let kill = HealthUploaderFaults(abandonAfterAnswer: { kind, _ in kind == .samples && answers.next() == 2 })
            let first = try await setup.withUploader(batchSize: 100, faults: kill) { uploader in await uploader.run() }
            #expect(first.samples.applied == 100 && first.failure == nil)
            #expect(try HealthUploadQueue(database: setup.gateway.database).backlog().samples == [.leased: 100, .pending: 100])

            // Restart: the same file opened again, a new uploader. Within the lease the leased batch waits.
            let reopened = try setup.gateway.reopen()
            let second = try await setup.withUploader(database: reopened, batchSize: 100, seed: 6) { uploader in await uploader.run() }
            #expect(second.samples.applied == 100 && second.samples.duplicate == 0)
            #expect(try HealthUploadQueue(database: reopened).backlog().samples == [.leased: 100])
            // Past the lease, it goes again: the server already has it.
            setup.clock.advance(by: .seconds(121))
            let third = try await setup.withUploader(database: reopened, batchSize: 100, seed: 7) { uploader in await uploader.run() }
            #expect(third.samples.duplicate == 100 && third.samples.applied == 0)
            #expect(try HealthUploadQueue(database: reopened).backlog().samples.isEmpty)
            let stored = try await setup.serverSamples()
            #expect(stored.count == 300 && Set(stored.map(\.sample.uid)) == Set(uids))
        }
    }

    @Test("tombstones reach the server after their samples: a deletion, a deletion before upload, a correction", arguments: ServerBackend.allCases)
    func tombstonesReachTheServer(_ backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let early = try health.ingest(1...4)
            try await setup.withUploader { uploader in
                #expect(await uploader.run().samples.applied == 4)
                let deleted = try health.apply(.deletedByTechnician(sampleUid: early[0], note: "wrong patient"))
                let corrected = try health.apply(.corrected(
                    sampleUid: early[1], replacement: HealthGateway.sample(sequence: 2, lane: .change, milligramsPerDecilitre: 104), by: .technician, note: nil))
                let late = try health.ingest(5...6)
                let deletedBeforeUpload = try health.apply(.vanishedFromDevice(sampleUid: late[0]))

                let run = await uploader.run()
                #expect(run.failure == nil)
                #expect(run.samples.applied == 3, "the two new samples, the one deleted included, and the replacement")
                #expect(run.deletions.applied == 3)
                let tombstones = try await setup.serverDeletions()
                #expect(Set(tombstones.map(\.deletion.uid)) == [deleted.deletionUid, try #require(corrected.deletionUid as String?), deletedBeforeUpload.deletionUid])
                let correction = try #require(tombstones.first { $0.deletion.uid == corrected.deletionUid })
                #expect(correction.deletion.reason == "correction" && correction.deletion.replacementSampleUid == corrected.replacementUid)
                let samples = try await setup.serverSamples()
                #expect(samples.count == 7)
                let byUid = Dictionary(uniqueKeysWithValues: samples.map { ($0.sample.uid, $0) })
                #expect(byUid[early[0]]?.deletedAt != nil && byUid[early[1]]?.deletedAt != nil && byUid[late[0]]?.deletedAt != nil)
                #expect(byUid[late[1]]?.deletedAt == nil && byUid[early[2]]?.deletedAt == nil)
                #expect(byUid[try #require(corrected.replacementUid)]?.sample.replaces == early[1])
                #expect(await uploader.run().requests == 0, "nothing is sent twice")
            }
        }
    }

    /// A gateway that lost its database registers the meter under a new peripheral uid and reads its records again
    /// from the start: the same readings (their dedup keys name the device by its address, not the uid), so the server
    /// answers `duplicate`, holds each once, and a deletion of a re-read record deletes the server's first copy.
    @Test("a gateway that lost its database re-reads a meter: duplicates, and its deletion reaches the first copy", arguments: ServerBackend.allCases)
    func lostDatabase(_ backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            let first = try HealthGateway(database: setup.gateway.database)
            let original = try first.ingest(1...3)
            try await setup.withUploader { uploader in #expect(await uploader.run().samples.applied == 3) }

            let replacementGateway = try GatewayFixture(name: "replacement")
            defer { replacementGateway.remove() }
            let second = try HealthGateway(database: replacementGateway.database, seed: 12)
            #expect(second.peripheralUid != first.peripheralUid, "registered anew")
            let reread = try second.ingest(1...4)
            let deleted = try second.apply(.deletedByTechnician(sampleUid: reread[1], note: "test strip"))
            try await setup.withUploader(database: replacementGateway.database) { uploader in
                let run = await uploader.run()
                #expect(run.failure == nil)
                #expect(run.samples.duplicate == 3, "\(run)")
                #expect(run.samples.applied == 1, "\(run)")
                #expect(run.deletions.applied == 1)
            }
            let samples = try await setup.serverSamples()
            #expect(samples.count == 4, "each reading once")
            let tombstones = try await setup.serverDeletions()
            #expect(tombstones.map(\.deletion.uid) == [deleted.deletionUid])
            #expect(samples.first { $0.sample.uid == original[1] }?.deletedAt == tombstones.first?.deletion.requestedAt, "the first copy deleted")
            #expect(samples.filter { $0.deletedAt != nil }.count == 1)
        }
    }

    @Test("a run whose samples failed sends no tombstone; the next run sends the sample, then its tombstone")
    func tombstonesWaitForTheirRun() async throws {
        try await withSync { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...2)
            let deletion = try health.apply(.deletedByTechnician(sampleUid: uids[0], note: nil))
            setup.server.faults.enqueue(.status(503), scope: .health)
            try await setup.withUploader { uploader in
                let failed = await uploader.run()
                #expect(failed.failure?.kind == .unavailable && failed.requests == 1)
                #expect(try HealthUploadQueue(database: setup.gateway.database).backlog().deletions == [.pending: 1])
                #expect(try await setup.serverDeletions().isEmpty)
                setup.clock.advance(by: .seconds(3600))
                let next = await uploader.run()
                #expect(next.samples.applied == 2 && next.deletions.applied == 1)
                let stored = try await setup.serverSamples()
                #expect(stored.first { $0.sample.uid == uids[0] }?.deletedAt != nil)
                #expect(try await setup.serverDeletions().map(\.deletion.uid) == [deletion.deletionUid])
            }
        }
    }

    @Test("a sample the server refuses is rejected with its reason, shown on the read side, and never sent again")
    func rejectedKeepsTheReason() async throws {
        try await withSync { setup in
            let health = try HealthGateway(database: setup.gateway.database)
            let uids = try health.ingest(1...2)
            // Another gateway of the tenant already stored other content under the first sample's uid: the server
            // refuses the uid for this one (a uid is an idempotency key, never reused for another reading).
            var random = SplitMix64(seed: 77)
            var other = HealthUploadWire.sample(try #require(try HealthUploadQueue(database: setup.gateway.database)
                .claimSamples(limit: 1, now: setup.clock.read(), using: &random)?.items.first))
            other.dedupKey = "another-reading"
            other.canonical.value = "150"
            other.reported.mantissa = 150
            let api = API(baseURL: setup.server.baseURL, token: try await setup.server.token(tenant: setup.tenant, gateway: "gw-2"))
            #expect(try await api.uploadHealth(HealthSamplesRequest(uploadRequestId: uids[1], samples: [other])).status == 200)
            // The claim above leased the first row: let its lease run out.
            setup.clock.advance(by: .seconds(3600))
            try await setup.withUploader { uploader in
                let run = await uploader.run()
                #expect(run.samples.rejected == 1 && run.samples.applied == 1 && run.failure == nil)
                let record = try #require(try health.store.sample(uid: uids[0]))
                #expect(record.upload.state == .rejected)
                #expect(record.upload.rejectedReason?.contains("uid reused for different content") == true, "\(record.upload)")
                #expect(try health.store.sample(uid: uids[1])?.upload.state == .uploaded)
                #expect(await uploader.run().requests == 0, "a rejected sample is not sent again")
            }
        }
    }

    @Test("a sync uploads health samples after its push, with no configuration of its own")
    func syncUploadsHealth() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(50, devices: 1)
            let health = try HealthGateway(database: setup.gateway.database)
            try health.ingest(1...20)
            let engine = try setup.engine()
            let report = await engine.sync(trigger: .manual)
            #expect(report.succeeded && report.push.applied > 0)
            #expect(report.health.samples.applied == 20 && report.health.failure == nil)
            #expect(try await setup.serverSamples().count == 20)
            // A health failure stays in the health report: the sync itself succeeds.
            try health.ingest(21...22)
            setup.server.faults.enqueue(.status(500), scope: .health)
            let next = await engine.sync(trigger: .manual)
            #expect(next.succeeded && next.health.failure?.kind == .server && next.health.samples.failed == 2)
        }
    }
}

