import DBus
import Foundation
import Testing
import TetherPrimitives
@testable import TetherStore
import TetherTestSupport

/// `ListHealthProjections` (docs/specs/control-api.md, "Health projection") served by a real tetherd from projections
/// written through the store before it starts: one never pulled (stale), one claimed (computing), one fresh.
@Suite struct HealthProjectionControlTests {
    @Test(.timeLimit(.minutes(4)))
    func projectionsAreListedWithTheirFreshness() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            do {
                let database = try GatewayDatabase(path: bed.databasePath)
                try database.write { db in
                    try db.execute(sql: """
                        INSERT INTO healthProjection (deviceUid, userIndex, metricCode, day) VALUES
                            ('periph-a', NULL, 160368, '2026-11-01'), ('periph-b', 1, 150021, '2026-11-02')
                        """)
                }
                let projections = HealthProjections(database: database)
                var random = SplitMix64(seed: 1)
                let claim = try #require(try projections.claim(now: Timestamp(nanoseconds: 1_793_577_600_000_000_000), using: &random))
                let rollup = HealthProjections.Rollup(
                    count: 3, specialCount: 1, otherUnitCount: 0, unit: "mm[Hg]", min: "118", max: "121.5", sum: "359.5", mean: "119.8333",
                    lastValue: "121.5", lastEffectiveAt: 1_793_577_000_000_000_000, revision: String(repeating: "ab", count: 16),
                    computedAt: 1_793_577_600_000_000_001)
                #expect(try projections.store([(claim.keys[1], rollup)], token: claim.token, fetchedAt: Timestamp(nanoseconds: 1_793_577_600_000_000_002)) == 1)
                try database.write { db in
                    try db.execute(sql: "INSERT INTO healthProjection (deviceUid, metricCode, day) VALUES ('periph-c', 160368, '2026-11-03')")
                }
            }
            try await bed.startDaemon()
            let listed = try await bed.client.records("ListHealthProjections", [.string("")])
            #expect(listed.map { $0["peripheral_uid"]?.stringValue } == ["periph-a", "periph-b", "periph-c"])
            #expect(listed.map { $0["freshness"]?.stringValue } == ["computing", "fresh", "stale"])
            #expect(listed[0]["count"] == nil && listed[0]["mean"] == nil, "no figures before a first answer")
            let fresh = listed[1]
            #expect(fresh["day"]?.stringValue == "2026-11-02")
            #expect(fresh["metric_code"]?.uint32Value == 150_021)
            #expect(fresh["user_index"]?.uint32Value == 1)
            #expect(fresh["count"]?.uint32Value == 3)
            #expect(fresh["special_count"]?.uint32Value == 1)
            #expect(fresh["min"]?.stringValue == "118" && fresh["max"]?.stringValue == "121.5" && fresh["mean"]?.stringValue == "119.8333")
            #expect(fresh["last"]?.stringValue == "121.5")
            #expect(fresh["fetched_at"]?.int64Value == 1_793_577_600_000_000_002)
            do {
                _ = try await bed.client.records("ListHealthProjections", [.string("C0:54:45:00:00:99")])
                Issue.record("expected io.tether.Gateway1.Error.UnknownDevice")
            } catch let error as DBusError {
                #expect(error.name == "io.tether.Gateway1.Error.UnknownDevice", "\(error)")
            }
        }
    }
}
