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

    @Test("the command parses")
    func parses() throws {
        #expect(try ServerCommand.parseAsRoot(["health", "samples", "--db", "a", "--tenant", "t"]) is ServerCommand.Health.Samples)
        #expect(throws: (any Error).self) { try ServerCommand.parseAsRoot(["health", "samples", "--db", "a"]) }
    }
}
