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

/// Records that vanish from a device (issue 14, the change lane; RecordTransfer rule 8, VanishedRecordSearch):
/// tether-sim's glucose meter through a real gateway, with readings deleted on the meter (`health-delete-records`).
/// A reading deleted from the middle of its memory is tombstoned `vanished-from-device` with everything stored under
/// its key, once; readings gone from the bottom (a full memory, the gateway's own deletion) are not; a meter whose
/// newest readings were deleted keeps its epoch and nothing is read twice; nothing with the policy off.
@Suite("Records that vanish from a device: found by counting, tombstoned once")
struct HealthVanishedRecordTests {
    typealias Rig = HealthColdLaneTests.Rig
    static let glucoseMeasurement = HealthColdLaneTests.glucoseMeasurement

    func withRig(
        _ meter: HealthDeviceSettings, auditing addresses: [String], faults: HealthStoreFaults = HealthStoreFaults(),
        _ body: (Rig) async throws -> Void
    ) async throws {
        var gateway = GatewayHarness.gatewayConfiguration()
        gateway.healthVanishedRecordAudit = HealthDevicePolicy(addresses: addresses)
        try await HealthColdLaneTests.withRig(meter, gateway: gateway, faults: faults, body)
    }

    static func audits(_ rig: Rig) -> [HealthRecordAudit] {
        rig.harness.trace.all.compactMap { if case .healthRecordAudit(let report) = $0 { report } else { nil } }
    }

    /// Readings leave the meter without the gateway asking.
    static func deleteOnMeter(_ keys: ClosedRange<UInt32>, _ rig: Rig) async throws {
        try await rig.harness.simulated.inject(
            "health-delete-records", ["device": rig.device, "sequence": .uint32(keys.lowerBound), "through": .uint32(keys.upperBound)])
    }

    /// Reconnects and waits for the new connection's audit report.
    static func reconnectAndAudit(_ rig: Rig) async throws -> HealthRecordAudit {
        let before = audits(rig).count
        try await rig.reconnect()
        try await waitUntil("the audit on the new connection", seconds: 30) { audits(rig).count > before }
        return try #require(audits(rig).dropFirst(before).first)
    }

    /// (epoch, key) of every glucose record stored, deleted ones included, each once however many samples it has.
    static func allRecords(_ rig: Rig) throws -> [HealthColdLaneTests.RecordKey] {
        Set(try rig.store.samples(HealthSampleQuery(includeDeleted: true, limit: 100_000)).map(\.sample)
            .filter { $0.characteristic == glucoseMeasurement }
            .compactMap { sample in sample.recordSequence.map { HealthColdLaneTests.RecordKey(epoch: sample.epoch, key: $0) } }).sorted()
    }

    /// The uids of the samples stored under a record key (the measurement's and its context's).
    static func samples(under key: Int64, _ rig: Rig) throws -> Set<String> {
        Set(try rig.store.samples(HealthSampleQuery(includeDeleted: true, limit: 100_000)).filter { $0.sample.recordSequence == key }.map(\.uid))
    }

    @Test(.timeLimit(.minutes(4)))
    func aReadingDeletedOnTheMeterIsTombstonedOnceAndTheBottomIsNot() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 12
        try await withRig(meter, auditing: [GatewayHarness.address(1).lowercased()]) { rig async throws in
            try await waitUntil("the first audit", seconds: 30) { !Self.audits(rig).isEmpty }
            #expect(Self.audits(rig).map(\.outcome) == [.intact], "\(Self.audits(rig))")

            // Reading 5 deleted on the meter: found, and every sample under key 5 tombstoned, nothing else.
            try await Self.deleteOnMeter(5...5, rig)
            var report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .vanished && report.keys == [5], "\(report)")
            let underFive = try Self.samples(under: 5, rig)
            #expect(!underFive.isEmpty && report.tombstones == underFive.count)
            let tombstones = try rig.store.deletions()
            #expect(Set(tombstones.map(\.sampleUid)) == underFive)
            #expect(tombstones.allSatisfy { $0.reason == .vanishedFromDevice && $0.requestedBy == "gateway" })

            // Next connection: 5 is known gone, the rest intact: nothing more written.
            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .intact, "\(report)")
            #expect(try rig.store.deletions().count == underFive.count)

            // The oldest three gone (a full memory drops its oldest): not vanished.
            try await Self.deleteOnMeter(1...3, rig)
            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .intact, "\(report)")
            #expect(try rig.store.deletions().count == underFive.count)

            // The two newest deleted: the meter's latest (10) is below the cursor (12), and its record 10 is the
            // one stored: no new epoch, nothing read again, and 11 and 12 vanished above the lowest held (4).
            try await Self.deleteOnMeter(11...12, rig)
            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .vanished && report.keys == [11, 12], "\(report)")
            #expect(try rig.cursor(Self.glucoseMeasurement)?.epoch == 0)
            #expect(try Self.allRecords(rig) == HealthColdLaneTests.keys(1...12), "each reading once, in epoch 0")
            // A reading taken now is numbered 13 and read once.
            try await rig.measure(1)
            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .intact, "\(report)")
            #expect(try Self.allRecords(rig) == HealthColdLaneTests.keys(1...13))
            #expect(await rig.cold.counters.duplicates == 0)
        }
    }

    /// A meter's failed test is a record with no value (GLS: the concentration is optional): the gateway takes it
    /// and stores no sample. It stays expected, so a reading deleted beside it is still found; and as the meter's
    /// latest record once its newest reading is deleted, it decides nothing (nothing stored to compare it with: no
    /// new epoch, nothing read twice) until a new reading comes.
    @Test(.timeLimit(.minutes(4)))
    func aFailedTestIsExpectedAndDecidesNothing() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 6
        try await withRig(meter, auditing: [GatewayHarness.address(1)]) { rig async throws in
            try await waitUntil("the first audit", seconds: 30) { !Self.audits(rig).isEmpty }
            try await rig.harness.simulated.inject("health-error-records", ["device": rig.device, "count": .uint32(1)])
            try await rig.measure(2)  // 7 fails, 8 reads
            var report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .intact, "\(report)")
            #expect(try rig.cursor(Self.glucoseMeasurement)?.position == 8)
            #expect(try Self.samples(under: 7, rig).isEmpty, "the failed test stored no sample")

            try await Self.deleteOnMeter(5...5, rig)
            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .vanished && report.keys == [5], "\(report)")

            // The newest reading (8) deleted: the meter's latest is now the failed test, which the store has nothing
            // for: undecided, interrupted; no new epoch.
            try await Self.deleteOnMeter(8...8, rig)
            let endings = await rig.endings().count
            try await rig.harness.simulated.inject("disconnect", ["device": rig.device])
            try await waitUntil("the procedure undecided on the latest record", seconds: 60) {
                await rig.endings().dropFirst(endings).contains { $0 == .finished(.interrupted(.latestUnconfirmed, cursor: RecordCursor(epoch: 0, last: 8))) }
            }
            #expect(try rig.cursor(Self.glucoseMeasurement)?.epoch == 0)
            #expect(try Self.allRecords(rig) == HealthColdLaneTests.keys(1...6) + HealthColdLaneTests.keys(8...8))

            // A new reading (9) is read from the cursor; the procedure completes and the audit finds 8 gone.
            try await rig.measure(1)
            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .vanished && report.keys == [8], "\(report)")
            #expect(try Self.allRecords(rig) == HealthColdLaneTests.keys(1...6) + HealthColdLaneTests.keys(8...9))
            #expect(try rig.cursor(Self.glucoseMeasurement)?.epoch == 0)
            #expect(await rig.cold.counters.duplicates == 0)
        }
    }

    /// The store fails part-way through a tombstoning: reading 6 (a measurement and its context, two samples)
    /// vanished, the first tombstone commits and the second is refused. The audit says it could not finish, and the
    /// next connection finds 6 gone again (a sample is still undeleted under it) and tombstones what is left: every
    /// sample under 6 ends with exactly one tombstone, and the connection after that finds the meter intact.
    @Test(.timeLimit(.minutes(4)))
    func aTombstoningThatFailsPartWayIsFinishedOnTheNextConnection() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 12
        meter.contextEvery = 2
        struct PlannedFailure: Error {}
        let tombstonings = Mutex(0)
        let faults = HealthStoreFaults(beforeDeletion: { change in
            guard case .vanishedFromDevice = change else { return }
            if tombstonings.withLock({ count in count += 1; return count == 2 }) { throw PlannedFailure() }
        })
        try await withRig(meter, auditing: [GatewayHarness.address(1)], faults: faults) { rig async throws in
            try await waitUntil("the first audit", seconds: 30) { !Self.audits(rig).isEmpty }
            let underSix = try Self.samples(under: 6, rig)
            #expect(underSix.count == 2, "a measurement and its context")

            try await Self.deleteOnMeter(6...6, rig)
            var report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .inconclusive && report.keys == [6], "\(report)")
            #expect(try rig.store.deletions().count == 1, "the first tombstone stands, the second rolled back")

            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .vanished && report.keys == [6] && report.tombstones == 1, "\(report)")
            let tombstones = try rig.store.deletions()
            #expect(tombstones.map(\.sampleUid).sorted() == underSix.sorted(), "each sample under 6 once")
            #expect(tombstones.allSatisfy { $0.reason == .vanishedFromDevice })

            report = try await Self.reconnectAndAudit(rig)
            #expect(report.outcome == .intact, "\(report)")
            #expect(try rig.store.deletions().count == 2)
        }
    }

    /// The policy off (the default), or naming another device: nothing is counted, nothing tombstoned.
    @Test(.timeLimit(.minutes(3)), arguments: [[], ["C0:54:45:00:00:09"]])
    func withoutThePolicyNothingIsLookedFor(_ addresses: [String]) async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 6
        try await withRig(meter, auditing: addresses) { rig async throws in
            try await Self.deleteOnMeter(3...3, rig)
            try await rig.reconnect()
            try await Task.sleep(for: .seconds(1))
            #expect(Self.audits(rig).isEmpty)
            #expect(try rig.store.deletions().isEmpty)
        }
    }
}
