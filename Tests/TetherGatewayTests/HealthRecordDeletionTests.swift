import BlueZSimulator
import BlueZTestSupport
import Foundation
import HealthDeviceModel
import HealthProfiles
import Synchronization
import Testing
@testable import TetherGateway
import TetherPrimitives
import TetherStore
import TetherTestSupport

/// Deleting acknowledged records from a device (issue 14, item 2; RecordTransfer rule 7, RecordDeletionRule):
/// tether-sim's glucose meter through a real gateway. The meter's memory is checked directly (the simulated
/// device's record store): emptied exactly up to what the backend acknowledged with nothing unacknowledged before
/// it, never beyond; nothing with the policy off or for another device; no tombstone on the gateway; the cursor
/// stays, so a record taken after a deletion is read once; a later connection does not delete again.
@Suite("Deleting a device's acknowledged records over RACP, by per-device policy")
struct HealthRecordDeletionTests {
    typealias Rig = HealthColdLaneTests.Rig
    static let glucoseMeasurement = HealthColdLaneTests.glucoseMeasurement
    /// RACP (0x2A52) "Delete Stored Records" (op code 0x02, GSS §3.178.2).
    static let racp: UInt16 = 0x2A52

    func withRig(_ meter: HealthDeviceSettings, deleting addresses: [String], _ body: (Rig) async throws -> Void) async throws {
        var gateway = GatewayHarness.gatewayConfiguration()
        gateway.healthRecordDeletion = HealthDevicePolicy(addresses: addresses)
        try await HealthColdLaneTests.withRig(meter, gateway: gateway, body)
    }

    /// The simulated meter's memory: the keys it holds.
    static func deviceKeys(_ rig: Rig) async throws -> [UInt16] {
        let device = try #require(await rig.harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(rig.address)))
        return await device.healthRecordKeys
    }

    /// Every "Delete Stored Records" the meter received, as the key of its "≤" operand.
    static func deleteRequests(_ rig: Rig) async throws -> [UInt16] {
        let device = try #require(await rig.harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(rig.address)))
        return await device.healthWrites.compactMap { write in
            // 0x02 Delete, 0x02 "≤", 0x01 sequence number, uint16 little-endian.
            guard write.characteristic == racp, write.bytes.count == 5, write.bytes[0] == 0x02 else { return nil }
            #expect(Array(write.bytes[1...2]) == [0x02, 0x01])
            return UInt16(write.bytes[3]) | UInt16(write.bytes[4]) << 8
        }
    }

    /// The gateway's deletion reports (tetherd logs them).
    static func reports(_ rig: Rig) -> [HealthRecordDeletion] {
        rig.harness.trace.all.compactMap { if case .healthRecordDeletion(let report) = $0 { report } else { nil } }
    }

    /// The backend acknowledges (applied) the samples of these record keys: claimed, marked `uploaded`; every other
    /// sample claimed with them is failed (its request failed), so it stays unacknowledged.
    static func acknowledge(_ keys: Set<Int64>, _ rig: Rig) throws {
        let queue = HealthUploadQueue(database: rig.harness.storage.database)
        var random = SplitMix64(seed: 11)
        guard let lease = try queue.claimSamples(limit: 1000, now: WallClock.now(), using: &random) else { return }
        let verdicts = lease.items.filter { keys.contains($0.record.sample.recordSequence ?? -1) }
            .map { (uid: $0.record.uid, verdict: HealthUploadVerdict.uploaded) }
        try queue.mark(.samples, requestId: lease.requestId, verdicts: verdicts)
        try queue.fail(.samples, requestId: lease.requestId)
    }

    /// Reconnects and waits until the gateway reported what it did about deleting after the new connection's
    /// complete procedure (deleted, or why not).
    static func reconnectAndDecide(_ rig: Rig) async throws -> HealthRecordDeletion {
        let before = reports(rig).count
        try await rig.reconnect()
        try await waitUntil("the deletion decided on the new connection", seconds: 30) { reports(rig).count > before }
        return try #require(reports(rig).dropFirst(before).first)
    }

    /// The policy names the meter: the backend acknowledges 1, 2 and 4 (not 3): only ≤ 2 is deleted. Then 3: ≤ 4
    /// (5 is pending). A record taken then (6) is read once from the cursor; 5 and 6 acknowledged: ≤ 6 after a
    /// backfill, the meter is empty. A later connection deletes nothing again, and a record taken after that (7) is
    /// read once too.
    /// The gateway keeps every sample, with no tombstone, and the cursor only goes forward.
    @Test(.timeLimit(.minutes(4)))
    func theMetersMemoryIsEmptiedExactlyUpToWhatTheBackendAcknowledged() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 5
        try await withRig(meter, deleting: [GatewayHarness.address(1).lowercased()]) { rig async throws in
            #expect(try rig.records(Self.glucoseMeasurement) == HealthColdLaneTests.keys(1...5))
            try await waitUntil("the first deletion decided", seconds: 30) { !Self.reports(rig).isEmpty }
            #expect(Self.reports(rig).map(\.outcome) == [.declined], "nothing acknowledged yet: \(Self.reports(rig))")
            #expect(try await Self.deviceKeys(rig) == [1, 2, 3, 4, 5])

            // 1, 2 and 4 acknowledged, 3 not (its upload failed): only ≤ 2.
            try Self.acknowledge([1, 2, 4], rig)
            var report = try await Self.reconnectAndDecide(rig)
            #expect(report.outcome == .deleted && report.through == 2, "\(report)")
            #expect(try await Self.deviceKeys(rig) == [3, 4, 5])

            // 3 acknowledged: ≤ 4, not 5 (pending).
            try Self.acknowledge([3], rig)
            report = try await Self.reconnectAndDecide(rig)
            #expect(report.outcome == .deleted && report.through == 4, "\(report)")
            #expect(try await Self.deviceKeys(rig) == [5])

            // A record taken now (a glucose meter sends records only in answer to RACP, GLS §3.106: it comes on the
            // next connection) is read from the cursor (≥ 6) once, though 1…4 are gone from the meter; the permit is
            // still 4 (5 and 6 pending): nothing deleted.
            try await rig.measure(1)
            report = try await Self.reconnectAndDecide(rig)
            #expect(report.outcome == .declined && report.reason?.contains("alreadyDeleted(through: 4)") == true, "\(report)")
            #expect(try rig.records(Self.glucoseMeasurement) == HealthColdLaneTests.keys(1...6))
            #expect(try await Self.deviceKeys(rig) == [5, 6])

            // 5 and 6 acknowledged; a technician's backfill on the same connection completes, and the deletion
            // follows it: ≤ 6, the meter is empty.
            try Self.acknowledge([5, 6], rig)
            let decided = Self.reports(rig).count
            let backfill = try await rig.harness.gateway.backfill(rig.address)
            #expect(backfill.map(\.outcome) == ["complete"], "\(backfill)")
            try await waitUntil("the deletion after the backfill", seconds: 30) { Self.reports(rig).count > decided }
            report = try #require(Self.reports(rig).last)
            #expect(report.outcome == .deleted && report.through == 6, "\(report)")
            #expect(try await Self.deviceKeys(rig) == [])

            // A later connection: nothing new acknowledged, nothing deleted again.
            report = try await Self.reconnectAndDecide(rig)
            #expect(report.outcome == .declined && report.reason?.contains("alreadyDeleted(through: 6)") == true, "\(report)")
            #expect(try await Self.deleteRequests(rig) == [2, 4, 6], "one request per deletion, none repeated")

            // The empty meter takes a reading: 7, read once on the next connection, and kept on the meter (pending).
            try await rig.measure(1)
            report = try await Self.reconnectAndDecide(rig)
            #expect(report.outcome == .declined, "\(report)")
            #expect(try rig.records(Self.glucoseMeasurement) == HealthColdLaneTests.keys(1...7))
            #expect(try await Self.deviceKeys(rig) == [7])
            #expect(try rig.samples(Self.glucoseMeasurement).count == 7, "one sample per record: nothing read twice")
            #expect(try rig.cursor(Self.glucoseMeasurement)?.position == 7)
            #expect(await rig.cold.counters.duplicates == 0)
            // The readings stay valid: deleting on the device wrote no tombstone and deleted no sample.
            #expect(try rig.store.deletions().isEmpty)
            #expect(try rig.store.sampleCount() == rig.store.sampleCount(includeDeleted: true))
            let endings = await rig.endings()
            for case .finished(let outcome) in endings {
                #expect(outcome.cursor.epoch == 0)
            }
        }
    }

    /// A meter that does not delete (Op Code Not Supported; the op code is optional in GLS): the refusal is
    /// reported, the meter is not asked again on that link (a backfill's complete procedure asks nothing), and its
    /// records stay; the next link asks once more.
    @Test(.timeLimit(.minutes(3)))
    func aMeterThatCannotDeleteIsAskedOncePerLink() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 3
        try await withRig(meter, deleting: [GatewayHarness.address(1)]) { rig async throws in
            try await rig.harness.simulated.inject("health-racp-delete-unsupported", ["device": rig.device])
            try Self.acknowledge([1, 2, 3], rig)
            let report = try await Self.reconnectAndDecide(rig)
            #expect(report.outcome == .refused && report.through == 3, "\(report)")
            #expect(report.reason?.contains("opCodeNotSupported") == true, "\(report)")
            let reported = Self.reports(rig).count
            let backfill = try await rig.harness.gateway.backfill(rig.address)
            #expect(backfill.map(\.outcome) == ["complete"], "\(backfill)")
            try await Task.sleep(for: .milliseconds(500))
            #expect(Self.reports(rig).count == reported, "not asked again on the link: \(Self.reports(rig))")
            #expect(try await Self.deleteRequests(rig) == [3])
            let again = try await Self.reconnectAndDecide(rig)
            #expect(again.outcome == .refused, "\(again)")
            #expect(try await Self.deleteRequests(rig) == [3, 3])
            #expect(try await Self.deviceKeys(rig) == [1, 2, 3])
            #expect(try rig.cursor(Self.glucoseMeasurement)?.position == 3)
        }
    }

    /// The policy off (the default), or naming another device: every record acknowledged, and nothing deleted.
    @Test(.timeLimit(.minutes(3)), arguments: [[], ["C0:54:45:00:00:09"]])
    func withoutThePolicyForTheDeviceNothingIsDeleted(_ addresses: [String]) async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 4
        try await withRig(meter, deleting: addresses) { rig async throws in
            try Self.acknowledge([1, 2, 3, 4], rig)
            try await rig.reconnect()
            try await Task.sleep(for: .seconds(1))  // a deletion would follow the complete procedure at once
            #expect(try await Self.deviceKeys(rig) == [1, 2, 3, 4])
            #expect(try await Self.deleteRequests(rig).isEmpty)
            #expect(Self.reports(rig).isEmpty, "no deletion is even considered")
        }
    }
}
