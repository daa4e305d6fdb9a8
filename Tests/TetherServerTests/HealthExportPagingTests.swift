import Foundation
import Logging
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

/// The FHIR export's pages as each store reads them, with the bounds in its query (`healthExportPage`): since, until,
/// limit, deleted samples left out, and a next page that starts after the last sample even within one instant, uids
/// ordered byte by byte on both backends (PostgreSQL's collation would otherwise order "A" and "a" its own way).
@Suite("health export paging: the store reads each page with its bounds")
struct HealthExportPagingTests {
    static let principal = GatewayPrincipal(tenant: "tenant-a", gateway: "gw-1", tokenID: "0123456789abcdef")

    static func withStore(_ backend: ServerBackend, _ body: @escaping @Sendable (any ServerStore) async throws -> Void) async throws {
        let directory = try makeTemporaryDirectory("tether-export-paging")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let storage = try await freshStorage(backend, in: directory) else { return }
        try await StoreAccess.with(storage, logger: Logger(label: "export-paging")) { store in try await body(store) }
    }

    static func uids(_ page: HealthExportPage) -> [String] { page.rows.map { String($0.sample.uid.suffix(1)) } }

    @Test("since, until, limit, deleted samples, and the next page within one instant", arguments: ServerBackend.allCases)
    func bounds(_ backend: ServerBackend) async throws {
        try await Self.withStore(backend) { store in
            let samples = (0..<6).map { index in
                HealthFixtures.sample(uid: "0190a5b2-0000-7000-8000-00000000000\(index)", deviceUID: "d\(index)", effectiveAt: [10, 20, 20, 20, 30, 40][index])
            }
            let results = try await store.uploadHealthSamples(samples, by: Self.principal, storedAt: 1)
            #expect(results.count == 6)
            _ = try await store.uploadHealthDeletions([HealthFixtures.deletion(of: samples[5].uid)], by: Self.principal, storedAt: 2)

            let first = try await store.healthExportPage(tenant: "tenant-a", query: HealthExportQuery(since: 20, limit: 2))
            #expect(Self.uids(first) == ["1", "2"])
            #expect(first.next == HealthExportPage.Position(since: 20, after: samples[2].uid))
            let second = try await store.healthExportPage(tenant: "tenant-a", query: HealthExportQuery(since: 20, after: samples[2].uid, limit: 2))
            #expect(Self.uids(second) == ["3", "4"])
            #expect(second.next == nil, "the deleted sample 5 is not a next page")
            #expect(Self.uids(try await store.healthExportPage(tenant: "tenant-a", query: HealthExportQuery(since: 10, until: 30))) == ["0", "1", "2", "3"])
            #expect(Self.uids(try await store.healthExportPage(tenant: "tenant-a", query: HealthExportQuery())) == ["0", "1", "2", "3", "4"])
            #expect(Self.uids(try await store.healthExportPage(tenant: "tenant-a", query: HealthExportQuery(limit: Int.max))) == ["0", "1", "2", "3", "4"])
            #expect(try await store.healthExportPage(tenant: "tenant-b", query: HealthExportQuery()).rows.isEmpty, "another tenant's samples")
        }
    }

    /// Following the next links one sample at a time visits every sample once, in (time, uid byte by byte) order, with
    /// every sample at one instant: the order the store sorts by and the order its next page starts from must be the
    /// same. Uploaded uids in either case are stored lowercase (HealthUploadPlanner).
    @Test("one at a time, every sample once, all at one instant", arguments: ServerBackend.allCases)
    func walk(_ backend: ServerBackend) async throws {
        try await Self.withStore(backend) { store in
            let uids = [
                "0190a5b2-0000-7000-8000-00000000000a", "0190A5B2-0000-7000-8000-0000000000B1", "0190a5b2-0000-7000-8000-00000000000c",
                "0190A5B2-0000-7000-8000-000000000009", "0190a5b2-0000-7000-8000-0000000000b0", "0190a5b2-0000-7000-8000-0000000000a0",
            ]
            let samples = uids.enumerated().map { index, uid in HealthFixtures.sample(uid: uid, deviceUID: "d\(index)", effectiveAt: 50) }
            _ = try await store.uploadHealthSamples(samples, by: Self.principal, storedAt: 1)
            var seen: [String] = []
            var query = HealthExportQuery(since: Int64.min, limit: 1)
            while true {
                let page = try await store.healthExportPage(tenant: "tenant-a", query: query)
                seen += page.rows.map(\.sample.uid)
                guard let next = page.next, seen.count <= uids.count else { break }
                query = HealthExportQuery(since: next.since, after: next.after, limit: 1)
            }
            #expect(seen == uids.map { $0.lowercased() }.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        }
    }
}
