import Foundation
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Retention: only synced data is pruned, and pruned events stay duplicates")
struct RetentionTests {
    /// Stores sequences `0..<count` of boot 1 for serial "P" at `simulationStart`, then pushes every command
    /// except those of the events in `unsynced`.
    private func populate(_ count: Int, skipping missing: Set<Int64> = [], unsynced: Set<Int64> = []) throws -> (GatewayDatabase, ConsumptionService) {
        let database = try GatewayDatabase.inMemory()
        let service = ConsumptionService(database: database)
        try store([.deviceInfo(deviceInfo("P"), negotiatedVersion: 1)] + (0..<Int64(count)).filter { !missing.contains($0) }.map { .hit(hit("P", sequence: $0)) }, in: service)
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 1)
        for lease in try outbox.claim(limit: 10_000, now: simulationStart, using: &random) {
            if case .consumptionEvent(let key)? = lease.command.entity, unsynced.contains(key.sequence) {
                try outbox.fail(lease, error: "later", now: simulationStart, using: &random)
            } else {
                try outbox.complete(lease, now: simulationStart)
            }
        }
        return (database, service)
    }

    @Test("synced events past the retention period go; unsynced and recent ones stay")
    func prunesOnlySynced() throws {
        let (database, service) = try populate(10, unsynced: [3])
        let retention = Retention(database: database, policy: RetentionPolicy(keepSynced: .seconds(86_400)))
        #expect(try retention.prune(now: simulationStart.advanced(by: .seconds(3600))).events == 0)  // too recent
        let report = try retention.prune(now: simulationStart.advanced(by: .seconds(2 * 86_400)))
        #expect(report.events == 9)
        #expect(try database.contents().events.map(\.sequence) == [3])
        #expect(try Outbox(database: database).counts().failed == 1)
        // Pruned events sent again are duplicates, not new events (§8.8).
        let again = try store((0..<10).map { .hit(hit("P", sequence: $0)) }, id: 2, in: service)
        #expect(again.storedEvents.isEmpty)
        #expect(again.duplicateEvents.count == 10)
        let boot = try #require(try database.contents().boots.first)
        #expect(boot.prunedThroughSequence == 9)
        #expect(boot.prunedGaps.isEmpty)
    }

    @Test("an event that had not arrived when its neighbours were pruned is still accepted, once")
    func gapsStayOpen() throws {
        let (database, service) = try populate(10, skipping: [4, 5])
        let retention = Retention(database: database, policy: RetentionPolicy(keepSynced: .seconds(60)))
        #expect(try retention.prune(now: simulationStart.advanced(by: .seconds(120))).events == 8)
        #expect(try database.contents().boots.first?.prunedGaps == [BootRecord.SequenceGap(from: 4, through: 5)])

        let late = try store([.hit(hit("P", sequence: 5, at: simulationStart.advanced(by: .seconds(130)))), .hit(hit("P", sequence: 6))], id: 2, in: service)
        #expect(late.storedEvents.map(\.sequence) == [5])
        #expect(late.duplicateEvents.map(\.sequence) == [6])
        // A restarted session knows what is stored below the gap, and that 5 is stored now.
        let seed = try service.sessionSeed(serial: "P")
        #expect(seed.history.boots[1]?.storedThrough == 3)
        #expect(seed.history.isStored(EventKey(serial: "P", bootCounter: 1, sequence: 5)))
        #expect(!seed.history.isStored(EventKey(serial: "P", bootCounter: 1, sequence: 4)))

        // Synced and pruned in its turn, 5 leaves the gap list; 4 is still awaited.
        var random = SplitMix64(seed: 2)
        let outbox = Outbox(database: database)
        for lease in try outbox.claim(limit: 10, now: simulationStart.advanced(by: .seconds(140)), using: &random) {
            try outbox.complete(lease, now: simulationStart.advanced(by: .seconds(140)))
        }
        #expect(try retention.prune(now: simulationStart.advanced(by: .seconds(400))).events == 1)
        #expect(try database.contents().boots.first?.prunedGaps == [BootRecord.SequenceGap(from: 4, through: 4)])
        #expect(try store([.hit(hit("P", sequence: 5)), .hit(hit("P", sequence: 4))], id: 3, in: service).storedEvents.map(\.sequence) == [4])
    }

    @Test("telemetry and the anchors of finished boots are pruned too")
    func telemetryAndAnchors() throws {
        let database = try GatewayDatabase.inMemory()
        let service = ConsumptionService(database: database)
        try store([
            .deviceInfo(deviceInfo("A", boot: 2), negotiatedVersion: 1),
            .battery(serial: "A", BatteryStatus(millivolts: 3600, percent: 40, isCharging: false), receivedAt: simulationStart),
            .anchor(serial: "A", anchor(boot: 1, ticks: 10, utc: simulationStart)),
            .anchor(serial: "A", anchor(boot: 2, ticks: 10, utc: simulationStart)),
        ], in: service)
        let outbox = Outbox(database: database)
        var random = SplitMix64(seed: 3)
        for lease in try outbox.claim(limit: 10, now: simulationStart, using: &random) { try outbox.complete(lease, now: simulationStart) }
        let report = try Retention(database: database, policy: RetentionPolicy(keepSynced: .seconds(60))).prune(now: simulationStart.advanced(by: .seconds(600)))
        #expect(report.telemetry == 1)
        #expect(report.anchors == 1)  // boot 1's; boot 2 is the device's current boot
        #expect(try database.contents().anchors.map(\.bootCounter) == [2])
    }
}
