import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

@Suite("health upload: samples and tombstones exactly once, per tenant")
struct HealthUploadTests {
    @Test("samples are applied, then duplicates when sent again; every field comes back exactly", arguments: ServerBackend.allCases)
    func appliedThenDuplicate(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            // Exact decimals at the edges: the largest mantissa, a negative exponent, a value no binary float holds.
            var exact = HealthFixtures.sample(mantissa: Int64.max, exponent: -128, value: "0.1000000000000000000000000000001", effectiveAt: 7)
            exact.device = HealthDeviceReference(uid: "periph-2")
            exact.skewMilliseconds = nil
            exact.userIndex = nil
            exact.recordSequence = nil
            var special = HealthFixtures.sample(effectiveAt: 8)
            special.valueStatus = "nres"
            special.reported = .init(mantissa: nil, exponent: nil, unit: "mm[Hg]")
            special.canonical = .init(value: nil, unit: "mm[Hg]")
            var correction = HealthFixtures.sample(effectiveAt: 9)
            correction.lane = "change"
            correction.rawBytes = nil
            correction.parserVersion = nil
            correction.replaces = special.uid
            let samples = [HealthFixtures.sample(), exact, special, correction]
            #expect(try await api.uploaded(samples).map(\.status) == [.applied, .applied, .applied, .applied])
            let again = try await api.uploaded(samples)
            #expect(again.map(\.status) == [.duplicate, .duplicate, .duplicate, .duplicate])
            #expect(again.map(\.uid) == samples.map(\.uid))
            // RFC 9562 §4: a UUID is the same in either case.
            var shouting = samples[0]
            shouting.uid = shouting.uid.uppercased()
            let echoed = try await api.uploaded([shouting])
            #expect(echoed == [HealthUploadResult(uid: shouting.uid, status: .duplicate)], "the result echoes the uid as sent")
            let stored = try await server.store.healthSamples(tenant: "tenant-a")
            #expect(Set(stored.map(\.sample)) == Set(samples), "every field is stored and read back as sent")
            #expect(stored.allSatisfy { $0.gateway == "gw-1" && $0.deletedAt == nil && $0.storedAt > 0 })
        }
    }

    @Test("the same reading under a new uid is a duplicate and writes nothing", arguments: ServerBackend.allCases)
    func dedupKeyUnderNewUID(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let original = HealthFixtures.sample(dedupKey: "bls/periph-1/reading-1")
            #expect(try await api.uploaded([original]).map(\.status) == [.applied])
            // A gateway that lost its database reads the device again and mints a new uid for the same reading.
            let reread = HealthFixtures.sample(dedupKey: "bls/periph-1/reading-1", value: "120")
            let results = try await api.uploaded([reread])
            #expect(results.map(\.status) == [.duplicate])
            #expect(results[0].reason?.contains(original.uid) == true)
            #expect(try await server.store.healthSamples(tenant: "tenant-a").map(\.sample.uid) == [original.uid])
        }
    }

    /// A gateway that lost its database read the device again: the re-read sample (new uid, same dedup key) was a
    /// duplicate, so the server holds the reading under the first uid only. A tombstone for the re-read uid that names
    /// the dedup key deletes that copy; without the key it could not (it is kept for a sample that never comes).
    @Test("a tombstone naming its sample's dedup key deletes the same reading stored under another uid", arguments: ServerBackend.allCases)
    func tombstoneByDedupKey(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let original = HealthFixtures.sample(dedupKey: "gls/periph-1/0/7")
            let other = HealthFixtures.sample(dedupKey: "gls/periph-1/0/8", effectiveAt: 1_793_520_000_000_000_009)
            #expect(try await api.uploaded([original, other]).map(\.status) == [.applied, .applied])
            let reread = HealthFixtures.sample(dedupKey: original.dedupKey)
            #expect(try await api.uploaded([reread]).map(\.status) == [.duplicate])

            // Without the key (an older gateway): stored, and the server's copy stays live.
            let blind = HealthFixtures.deletion(of: HealthFixtures.sample(dedupKey: other.dedupKey).uid)
            #expect(try await api.deleted([blind]).map(\.status) == [.applied])
            #expect(try await server.store.healthSamples(tenant: "tenant-a").first { $0.sample.uid == other.uid }?.deletedAt == nil)

            var tombstone = HealthFixtures.deletion(of: reread.uid)
            tombstone.sampleDedupKey = original.dedupKey
            #expect(try await api.deleted([tombstone]).map(\.status) == [.applied])
            let stored = try await server.store.healthSamples(tenant: "tenant-a")
            #expect(stored.first { $0.sample.uid == original.uid }?.deletedAt == tombstone.requestedAt, "the same reading, deleted")
            // The key only finds the sample: a retry without it is the same tombstone; another one for the reading is a duplicate.
            var retry = tombstone
            retry.sampleDedupKey = nil
            #expect(try await api.deleted([retry]).map(\.status) == [.duplicate])
            var again = HealthFixtures.deletion(of: HealthFixtures.uid(), requestedAt: 1_793_700_000_000_000_000)
            again.sampleDedupKey = original.dedupKey
            let duplicate = try await api.deleted([again])
            #expect(duplicate.map(\.status) == [.duplicate] && duplicate[0].reason?.contains(original.uid) == true, "\(duplicate)")
            #expect(try await server.store.healthSamples(tenant: "tenant-a").first { $0.sample.uid == original.uid }?.deletedAt == tombstone.requestedAt)
            // Another tenant's key finds nothing here.
            let otherTenant = try await server.api(tenant: "tenant-b", gateway: "gw-9")
            var foreign = HealthFixtures.deletion(of: HealthFixtures.uid())
            foreign.sampleDedupKey = other.dedupKey
            #expect(try await otherTenant.deleted([foreign]).map(\.status) == [.applied])
            #expect(try await server.store.healthSamples(tenant: "tenant-a").first { $0.sample.uid == other.uid }?.deletedAt == nil)
        }
    }

    @Test("a uid reused for different content is rejected and the stored sample kept", arguments: ServerBackend.allCases)
    func uidReused(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let original = HealthFixtures.sample()
            #expect(try await api.uploaded([original]).map(\.status) == [.applied])
            var changed = original
            changed.canonical.value = "121"
            changed.reported.mantissa = 121
            let results = try await api.uploaded([changed])
            #expect(results.map(\.status) == [.rejected])
            #expect(results[0].reason?.contains("uid reused for different content") == true)
            #expect(try await server.store.healthSamples(tenant: "tenant-a").map(\.sample) == [original])
        }
    }

    /// The gateway read Device Information between an upload whose answer was lost and its retry: the retry names
    /// the device more fully, and it is still the same sample. Another device uid is another sample's content.
    @Test("a retry that only adds what the device said about itself is a duplicate; another device uid is not", arguments: ServerBackend.allCases)
    func retryWithDeviceInformation(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            var original = HealthFixtures.sample()
            original.device = HealthDeviceReference(uid: original.device.uid)
            #expect(try await api.uploaded([original]).map(\.status) == [.applied])
            var described = original
            described.device = HealthDeviceReference(
                uid: original.device.uid, address: "C0:48:45:00:00:02", manufacturer: "ACME", model: "BP-7", serial: "S1")
            #expect(try await api.uploaded([described]).map(\.status) == [.duplicate])
            var otherDevice = original
            otherDevice.device = HealthDeviceReference(uid: "0190a000-0000-7000-8000-0000000000ee")
            #expect(try await api.uploaded([otherDevice]).map(\.status) == [.rejected])
            #expect(try await server.store.healthSamples(tenant: "tenant-a").map(\.sample) == [original])
        }
    }

    @Test("a uid twice in one request: applied once, then duplicate", arguments: ServerBackend.allCases)
    func twiceInOneRequest(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let sample = HealthFixtures.sample()
            var other = sample
            other.dedupKey = "other"
            #expect(try await api.uploaded([sample, sample, other]).map(\.status) == [.applied, .duplicate, .rejected])
            #expect(try await server.store.healthSamples(tenant: "tenant-a").count == 1)
        }
    }

    @Test("the same samples and tombstones sent by 8 concurrent requests are stored once", arguments: ServerBackend.allCases)
    func concurrentRetries(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let samples = (0..<100).map { HealthFixtures.sample(effectiveAt: Int64($0)) }
            let tombstones = samples.prefix(20).map { HealthFixtures.deletion(of: $0.uid) }
            let answers = try await withThrowingTaskGroup(of: [HealthUploadResult].self) { group in
                for round in 0..<8 {
                    // Half of them in the opposite order: rows are written in another order, answers come back in request order.
                    group.addTask { round % 2 == 0 ? try await api.uploaded(samples) : Array(try await api.uploaded(Array(samples.reversed())).reversed()) }
                    group.addTask { try await api.deleted(tombstones) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let sampleAnswers = answers.filter { $0.count == samples.count }
            let tombstoneAnswers = answers.filter { $0.count == tombstones.count }
            #expect(sampleAnswers.count == 8)
            #expect(tombstoneAnswers.count == 8)
            for index in samples.indices {
                let statuses = sampleAnswers.map { $0[index].status }
                #expect(statuses.filter { $0 == .applied }.count == 1, "sample \(index): \(statuses)")
                #expect(statuses.filter { $0 == .duplicate }.count == 7)
            }
            for index in tombstones.indices {
                #expect(tombstoneAnswers.map { $0[index].status }.filter { $0 == .applied }.count == 1, "tombstone \(index)")
            }
            let stored = try await server.store.healthSamples(tenant: "tenant-a")
            #expect(stored.count == 100)
            #expect(stored.filter { $0.deletedAt != nil }.count == 20, "every tombstone deletes its sample, whichever came first")
        }
    }

    @Test("a tombstone before its sample: the sample is stored already deleted", arguments: ServerBackend.allCases)
    func tombstoneBeforeSample(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let sample = HealthFixtures.sample()
            let tombstone = HealthFixtures.deletion(of: sample.uid, requestedAt: 1_793_600_000_000_000_123)
            #expect(try await api.deleted([tombstone]).map(\.status) == [.applied])
            #expect(try await server.store.healthSamples(tenant: "tenant-a").isEmpty)
            #expect(try await api.uploaded([sample]).map(\.status) == [.applied])
            let stored = try await server.store.healthSamples(tenant: "tenant-a")
            #expect(stored.map(\.deletedAt) == [1_793_600_000_000_000_123], "deleted at the tombstone's requested_at, as on the gateway")
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").map(\.deletion) == [tombstone])
        }
    }

    @Test("a tombstone after its sample marks it deleted; tombstones are idempotent", arguments: ServerBackend.allCases)
    func tombstoneIdempotent(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let sample = HealthFixtures.sample()
            let replacement = HealthFixtures.sample(value: "118", effectiveAt: 1_793_520_000_000_000_001)
            #expect(try await api.uploaded([sample, replacement]).map(\.status) == [.applied, .applied])
            let tombstone = HealthFixtures.deletion(of: sample.uid, reason: "correction", requestedBy: "technician", replacement: replacement.uid)
            #expect(try await api.deleted([tombstone]).map(\.status) == [.applied])
            #expect(try await api.deleted([tombstone]).map(\.status) == [.duplicate], "the same tombstone again")
            var altered = tombstone
            altered.note = "another note"
            let reused = try await api.deleted([altered])
            #expect(reused.map(\.status) == [.rejected])
            #expect(reused[0].reason?.contains("uid reused for different content") == true)
            let second = HealthFixtures.deletion(of: sample.uid, requestedAt: 1_793_700_000_000_000_000)
            #expect(try await api.deleted([second]).map(\.status) == [.duplicate], "another tombstone for a deleted sample")
            let stored = try await server.store.healthSamples(tenant: "tenant-a")
            #expect(stored.first { $0.sample.uid == sample.uid }?.deletedAt == tombstone.requestedAt, "the first tombstone's time stays")
            #expect(stored.first { $0.sample.uid == replacement.uid }?.deletedAt == nil)
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").map(\.deletion) == [tombstone])
        }
    }

    @Test("tenants are independent on both endpoints: the same uid in two tenants is two rows", arguments: ServerBackend.allCases)
    func tenantIsolation(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let a = try await server.api(tenant: "tenant-a", gateway: "gw-1")
            let b = try await server.api(tenant: "tenant-b", gateway: "gw-1")
            let sample = HealthFixtures.sample()
            #expect(try await a.uploaded([sample]).map(\.status) == [.applied])
            // Tenant B's sample with tenant A's uid and dedup key but other values: in B it is new, not a reused uid.
            var other = sample
            other.canonical.value = "99"
            other.reported.mantissa = 99
            #expect(try await b.uploaded([other]).map(\.status) == [.applied], "neither the uid nor the dedup key is seen across tenants")
            let onlyB = HealthFixtures.sample(effectiveAt: 1)
            #expect(try await b.uploaded([onlyB]).map(\.status) == [.applied])
            let tombstone = HealthFixtures.deletion(of: sample.uid)
            #expect(try await a.deleted([tombstone]).map(\.status) == [.applied])
            #expect(try await b.deleted([HealthFixtures.deletion(uid: tombstone.uid, of: onlyB.uid)]).map(\.status) == [.applied],
                "the same tombstone uid in another tenant is another tombstone")
            let inA = try await server.store.healthSamples(tenant: "tenant-a")
            let inB = try await server.store.healthSamples(tenant: "tenant-b")
            #expect(inA.map(\.sample) == [sample])
            #expect(inA.first?.deletedAt == tombstone.requestedAt)
            #expect(Set(inB.map(\.sample.uid)) == [sample.uid, onlyB.uid])
            #expect(inB.first { $0.sample.uid == sample.uid }?.sample == other)
            #expect(inB.first { $0.sample.uid == sample.uid }?.deletedAt == nil, "tenant A's tombstone does not touch tenant B's sample")
            #expect(inB.first { $0.sample.uid == onlyB.uid }?.deletedAt != nil)
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").map(\.deletion.sampleUid) == [sample.uid])
        }
    }

    @Test("over the limit: 400 batch-too-long with the limit, nothing stored", arguments: ServerBackend.allCases)
    func batchTooLong(backend: ServerBackend) async throws {
        try await withServer(backend, configure: {
            $0.limits.maximumHealthSamplesPerRequest = 3
            $0.limits.maximumHealthDeletionsPerRequest = 2
        }) { server in
            let api = try await server.api()
            let samples = (0..<4).map { HealthFixtures.sample(effectiveAt: Int64($0)) }
            let tooMany = try await api.upload(samples)
            #expect(tooMany.status == 400)
            #expect(tooMany.problem?.problemType == .batchTooLong)
            #expect(tooMany.problem?.maxCommands == 3)
            let deletions = (0..<3).map { _ in HealthFixtures.deletion(of: HealthFixtures.uid()) }
            let tooManyDeletions = try await api.delete(deletions)
            #expect(tooManyDeletions.status == 400)
            #expect(tooManyDeletions.problem?.problemType == .batchTooLong)
            #expect(tooManyDeletions.problem?.maxCommands == 2)
            #expect(try await server.store.healthSamples(tenant: "tenant-a").isEmpty)
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").isEmpty)
            #expect(try await api.uploaded(Array(samples.prefix(3))).count == 3, "at the limit is fine")
        }
    }

    @Test("the default limits are the contract's")
    func defaultLimits() async throws {
        try await withServer(.sqlite) { server in
            let api = try await server.api()
            let deletions = (0...HealthUpload.maximumDeletionsPerRequest).map { _ in HealthFixtures.deletion(of: HealthFixtures.uid(), note: nil) }
            let answer = try await api.delete(deletions)
            #expect(answer.status == 400)
            #expect(answer.problem?.maxCommands == HealthUpload.maximumDeletionsPerRequest)
            #expect(ServerLimits().maximumHealthSamplesPerRequest == HealthUpload.maximumSamplesPerRequest)
        }
    }

    @Test("no token: 401 on both endpoints; malformed JSON: 400; GET: 405 with Allow POST", arguments: ServerBackend.allCases)
    func refusals(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let anonymous = API(baseURL: server.baseURL, token: nil)
            for answer in [try await anonymous.upload([HealthFixtures.sample()]), try await anonymous.delete([HealthFixtures.deletion(of: HealthFixtures.uid())])] {
                #expect(answer.status == 401)
                #expect(answer.problem?.problemType == .unauthorized)
            }
            let api = try await server.api()
            for path in [HealthUpload.samplesPath, HealthUpload.deletionsPath] {
                let broken = try await api.send(.POST, path, json: Data("{\"samples\": [".utf8))
                #expect(broken.status == 400)
                #expect(broken.problem?.problemType == .malformedRequest)
                let method = try await api.send(.GET, path)
                #expect(method.status == 405)
                #expect(method.headers.first(name: "Allow") == "POST")
            }
            let missingField = try await api.send(.POST, HealthUpload.samplesPath, json: Data(#"{"upload_request_id":"x","samples":[{"uid":"y"}]}"#.utf8))
            #expect(missingField.status == 400)
            #expect(missingField.problem?.detail?.contains("samples[0]") == true)
            #expect(try await server.store.healthSamples(tenant: "tenant-a").isEmpty)
        }
    }

    @Test("storage full or unavailable: 503 with Retry-After, as for a push", arguments: [true, false])
    func storageFailures(full: Bool) async throws {
        let directory = try makeTemporaryDirectory("tether-server-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = ServerStorage.sqlite(path: directory + "/server.sqlite")
        let failure: any Error =
            full ? StorageFull(description: "planted: disk full") as any Error : StorageUnavailable(description: "planted: database down") as any Error
        let store = FailingHealthStore(base: try storage.makeStore(logger: TestServer.quietLogger), failure: failure)
        let server = try await TestServer.start(storage: storage, store: store)
        do {
            let api = try await server.api()
            for answer in [try await api.upload([HealthFixtures.sample()]), try await api.delete([HealthFixtures.deletion(of: HealthFixtures.uid())])] {
                #expect(answer.status == 503)
                #expect(answer.problem?.problemType == .unavailable)
                #expect(answer.headers.first(name: "Retry-After") == "30")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

/// A store whose health uploads fail as a full or stopped database makes them fail; everything else is `base`'s.
final class FailingHealthStore: ServerStore {
    let base: any ServerStore
    let failure: any Error

    init(base: any ServerStore, failure: any Error) {
        self.base = base
        self.failure = failure
    }

    func uploadHealthSamples(_ samples: [HealthSampleUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult] {
        throw failure
    }

    func uploadHealthDeletions(_ deletions: [HealthDeletionUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult] {
        throw failure
    }

    func migrate() async throws { try await base.migrate() }
    func insertToken(_ token: TokenRecord) async throws { try await base.insertToken(token) }
    func token(id: String) async throws -> TokenRecord? { try await base.token(id: id) }
    func revokeToken(id: String, at date: Date) async throws -> Bool { try await base.revokeToken(id: id, at: date) }
    func tokens() async throws -> [TokenRecord] { try await base.tokens() }
    func firmwareUpdates(tenant: String, address: String?) async throws -> [FirmwareUpdateRow] {
        try await base.firmwareUpdates(tenant: tenant, address: address)
    }
    func push(_ commands: [PushCommand], by principal: GatewayPrincipal) async throws -> [CommandResult] { try await base.push(commands, by: principal) }
    func feed(tenant: String, after: Int64, limit: Int) async throws -> FeedSlice { try await base.feed(tenant: tenant, after: after, limit: limit) }
    func settings(tenant: String, serial: String) async throws -> DeviceSettingsResource? { try await base.settings(tenant: tenant, serial: serial) }
    func replaceDesiredSettings(
        tenant: String, serial: String, desired: SettingsDocument, author: SettingsChangeAuthor, origin: String?, ifMatch: [Int64]?
    ) async throws -> BatchPlanner.SettingsOutcome {
        try await base.replaceDesiredSettings(tenant: tenant, serial: serial, desired: desired, author: author, origin: origin, ifMatch: ifMatch)
    }
    func upsertDevice(tenant: String, _ document: DevicePayload) async throws -> Int64 { try await base.upsertDevice(tenant: tenant, document) }
    func deleteDevice(tenant: String, serial: String) async throws -> Int64? { try await base.deleteDevice(tenant: tenant, serial: serial) }
    func statistics(tenant: String) async throws -> TenantStatistics { try await base.statistics(tenant: tenant) }
    func healthSamples(tenant: String) async throws -> [HealthSampleRow] { try await base.healthSamples(tenant: tenant) }
    func healthExportPage(tenant: String, query: HealthExportQuery) async throws -> HealthExportPage {
        try await base.healthExportPage(tenant: tenant, query: query)
    }
    func healthDeletions(tenant: String) async throws -> [HealthDeletionRow] { try await base.healthDeletions(tenant: tenant) }
    func deleteHealthSample(tenant: String, tombstone: HealthDeletionUpload, storedAt: Int64) async throws -> HealthSampleDeletion {
        throw failure
    }
    func healthProjectionInputs(tenant: String, keys: [HealthProjectionKey]) async throws -> [[HealthProjectionInput]] {
        try await base.healthProjectionInputs(tenant: tenant, keys: keys)
    }
}
