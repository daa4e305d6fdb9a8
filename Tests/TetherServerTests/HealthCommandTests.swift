import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting
import TetherTestSupport

@Suite("tether-server health samples: what the server holds, as JSON lines")
struct HealthCommandTests {
    @Test("prints the tenant's samples, deleted ones marked, and nothing of another tenant")
    func samples() async throws {
        let binary = try BuiltProducts.require("tether-server", override: "TETHER_SERVER_BINARY")
        try await withServer(.sqlite) { server in
            guard case .sqlite(let path) = server.configuration.storage else { Issue.record("not SQLite"); return }
            let a = try await server.api(tenant: "tenant-a")
            let b = try await server.api(tenant: "tenant-b")
            let first = HealthFixtures.sample(value: "120", effectiveAt: 2)
            let second = HealthFixtures.sample(mantissa: 985, exponent: -1, value: "98.5", effectiveAt: 1)
            #expect(try await a.uploaded([first, second]).allSatisfy { $0.status == .applied })
            #expect(try await a.deleted([HealthFixtures.deletion(of: first.uid, requestedAt: 77)]).map(\.status) == [.applied])
            #expect(try await b.uploaded([HealthFixtures.sample(effectiveAt: 3)]).map(\.status) == [.applied])

            let run = try await ChildProcess.run(binary, ["health", "samples", "--db", path, "--tenant", "tenant-a"])
            #expect(run.status == 0, "\(run.standardError)")
            let lines = run.standardOutput.split(separator: "\n")
            let listed = try lines.map { try JSONDecoder().decode(HealthSampleListing.self, from: Data($0.utf8)) }
            #expect(listed.map(\.uid) == [second.uid, first.uid], "by effective time")
            #expect(listed.map(\.value) == ["98.5", "120"])
            #expect(listed.map(\.deleted) == [false, true])
            #expect(listed.map(\.deletedAt) == [nil, 77])
            #expect(listed.allSatisfy { $0.metricCode == 150021 && $0.unit == "mm[Hg]" && $0.deviceUID == "periph-1" && $0.gateway == "gw-1" })
            #expect(listed.map(\.dedupKey) == [second.dedupKey, first.dedupKey])
            // The value travels as the numeral it was, never through a float.
            #expect(lines.first?.contains(#""value":"98.5""#) == true, "\(lines.first ?? "")")
        }
    }

    /// `tether-server health delete`: the tombstone as JSON and exit 0; again: "already deleted", exit 0, nothing
    /// more; an unknown sample or another tenant's: exit 1 with the reason on stderr; a bad UUID or note: exit 64.
    @Test("health delete: the tombstone, already deleted, unknown, refused")
    func delete() async throws {
        let binary = try BuiltProducts.require("tether-server", override: "TETHER_SERVER_BINARY")
        try await withServer(.sqlite) { server in
            guard case .sqlite(let path) = server.configuration.storage else { Issue.record("not SQLite"); return }
            let a = try await server.api(tenant: "tenant-a")
            let sample = HealthFixtures.sample()
            #expect(try await a.uploaded([sample]).map(\.status) == [.applied])
            let base = ["health", "delete", "--db", path, "--tenant", "tenant-a", "--sample", sample.uid]

            let run = try await ChildProcess.run(binary, base + ["--note", "withdrawn by the clinic"])
            #expect(run.status == 0, "\(run.standardError)")
            let tombstone = try JSONDecoder().decode(HealthDeletionUpload.self, from: Data(run.standardOutput.utf8))
            #expect(tombstone.sampleUid == sample.uid && tombstone.reason == "backend" && tombstone.requestedBy == "backend")
            #expect(tombstone.note == "withdrawn by the clinic" && tombstone.sampleDedupKey == sample.dedupKey)
            #expect(try await server.store.healthDeletions(tenant: "tenant-a").map(\.deletion.uid) == [tombstone.uid])
            let feed = try await server.store.feed(tenant: "tenant-a", after: 0, limit: 10)
            #expect(feed.entries.map(\.change.healthDeletion?.uid) == [tombstone.uid])

            let again = try await ChildProcess.run(binary, base)
            #expect(again.status == 0 && again.standardOutput.contains("already deleted"), "\(again.standardOutput)")
            #expect(try await server.store.feed(tenant: "tenant-a", after: 0, limit: 10).entries.count == 1)

            let other = try await ChildProcess.run(binary, ["health", "delete", "--db", path, "--tenant", "tenant-b", "--sample", sample.uid])
            #expect(other.status == 1 && other.standardError.contains("holds no health sample"), "\(other.standardError)")
            for arguments in [["--sample", "not-a-uuid"], ["--sample", sample.uid, "--note", ""]] {
                let refused = try await ChildProcess.run(binary, ["health", "delete", "--db", path, "--tenant", "tenant-a"] + arguments)
                #expect(refused.status == 64, "\(arguments): \(refused.status) \(refused.standardError)")
            }
        }
    }

    @Test("the command parses")
    func parses() throws {
        #expect(try ServerCommand.parseAsRoot(["health", "samples", "--db", "a", "--tenant", "t"]) is ServerCommand.Health.Samples)
        #expect(throws: (any Error).self) { try ServerCommand.parseAsRoot(["health", "samples", "--db", "a"]) }
        #expect(try ServerCommand.parseAsRoot(["health", "delete", "--db", "a", "--tenant", "t", "--sample", "01890a5d-ac96-774b-bcce-b302099a8101"])
            is ServerCommand.Health.Delete)
    }
}
