import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import HealthDeviceModel
import HealthProfiles
import Synchronization
import Testing
@testable import TetherGateway
import TetherPrimitives
import TetherStore
import TetherTestSupport

/// The cold lane end to end: tether-sim's glucose meter and CGM (RACP servers with stored records and faults)
/// through a real gateway on a private bus into its store. Every record once, the cursor at the last key, a second
/// connection taking only what is new, a drop mid-transfer resumed with nothing lost or doubled, a cleared meter
/// starting a new epoch.
@Suite("The health cold lane: stored records over RACP into the store, resumable and exactly once")
struct HealthColdLaneTests {
    static let glucoseMeasurement = HealthCharacteristic.glucoseMeasurement.uuid
    static let glucoseContext = HealthCharacteristic.glucoseMeasurementContext.uuid
    static let cgmMeasurement = HealthCharacteristic.cgmMeasurement.uuid

    /// A gateway with the hot and cold lanes on its store, one health device, and what the test needs of them.
    struct Rig {
        let harness: GatewayHarness
        let cold: HealthColdLane
        let store: HealthStore
        let address = GatewayHarness.address(1)

        var device: DBusValue { .objectPath(SimulatedBlueZ.devicePath(address)) }

        func samples(_ characteristic: String) throws -> [HealthSample] {
            try store.samples(HealthSampleQuery(limit: 100_000)).map(\.sample).filter { $0.characteristic == characteristic }
        }

        /// (epoch, key) of every record stored from `characteristic`, each once however many samples it has.
        func records(_ characteristic: String) throws -> [RecordKey] {
            Set(try samples(characteristic).compactMap { sample in
                sample.recordSequence.map { RecordKey(epoch: sample.epoch, key: $0) }
            }).sorted()
        }

        func cursor(_ characteristic: String) throws -> HealthIngestCursorRecord? {
            try store.cursors().first { $0.stream.characteristic == characteristic }
        }

        /// The connections on which a procedure completed.
        func completedLinks() async -> Set<UInt64> {
            Set(await cold.counters.procedures.compactMap { if case .finished(.complete) = $0.ending { $0.link } else { nil } })
        }

        func endings() async -> [RecordProcedureEnding] { await cold.counters.procedures.map(\.ending) }

        func measure(_ times: Int) async throws {
            for _ in 0..<times {
                let taken = try await harness.simulated.control("TakeMeasurement", [device, .variantDictionary([:])])
                #expect(taken == [.bool(true)])
            }
        }

        /// Drops the link and waits until the gateway has it back and its cold lane has completed a procedure on a
        /// connection it had not completed one on before.
        func reconnect() async throws {
            let before = await completedLinks()
            try await harness.simulated.inject("disconnect", ["device": device])
            try await waitUntil("a cold-lane procedure completed on a later connection", seconds: 60) {
                !(await completedLinks()).isSubset(of: before)
            }
        }
    }

    struct RecordKey: Hashable, Comparable, CustomStringConvertible {
        var epoch: Int64
        var key: Int64
        static func < (a: Self, b: Self) -> Bool { (a.epoch, a.key) < (b.epoch, b.key) }
        var description: String { "\(epoch)/\(key)" }
    }

    static func keys(_ range: ClosedRange<Int64>, epoch: Int64 = 0) -> [RecordKey] {
        range.map { RecordKey(epoch: epoch, key: $0) }
    }

    func withRig(
        _ settings: HealthDeviceSettings, faults: HealthStoreFaults = HealthStoreFaults(), waitForCompletion: Bool = true,
        _ body: (Rig) async throws -> Void
    ) async throws {
        try await Self.withRig(settings, faults: faults, waitForCompletion: waitForCompletion, body)
    }

    /// One health device on a gateway configured as `gateway`, paired, its first cold-lane procedure complete (unless
    /// told not to wait); then `body`, then the lanes' failure counters are checked.
    static func withRig(
        _ settings: HealthDeviceSettings, gateway: GatewayConfiguration = GatewayHarness.gatewayConfiguration(),
        faults: HealthStoreFaults = HealthStoreFaults(), waitForCompletion: Bool = true, _ body: (Rig) async throws -> Void
    ) async throws {
        var simulator = GatewayHarness.configuration(devices: 1)
        simulator.devices[0].health = settings
        let lane = Mutex<HealthHotLane?>(nil)
        try await GatewayHarness.with(simulator: simulator, gateway: gateway, health: { storage in
            let cold = HealthColdLane(database: storage.database, committer: storage.committer, faults: faults)
            let made = HealthHotLane(database: storage.database, committer: storage.committer, coldLane: cold)
            lane.withLock { $0 = made }
            return made
        }) { harness in
            let hot = try #require(lane.withLock { $0 })
            let rig = Rig(harness: harness, cold: hot.coldLane, store: HealthStore(database: harness.storage.database))
            _ = try await harness.gateway.pair(address: rig.address, delegate: RejectingDelegate())
            if waitForCompletion {
                try await waitUntil("the first complete cold-lane procedure", seconds: 60) { !(await rig.completedLinks()).isEmpty }
            }
            try await body(rig)
            let (counters, failure) = (await rig.cold.counters, await rig.cold.lastFailure)
            #expect(counters.storeFailures == (waitForCompletion ? 0 : 1), "\(String(describing: failure))")
            let (refused, refusals) = (await hot.counters.refused, await hot.refusals)
            #expect(refused == 0, "\(refusals)")
        }
    }

    /// A meter with 12 stored records (every second one with a Glucose Measurement Context): exactly 12 readings,
    /// the cursor at 12 in epoch 0, and each context stored beside its measurement by sequence number (GLS §3.107)
    /// with the measurement's time. A record taken while the gateway is away comes on the next connection, alone.
    @Test(.timeLimit(.minutes(3)))
    func aMetersStoredRecordsAreTakenOnceAndTheNextConnectionTakesOnlyNewOnes() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 12
        try await withRig(meter) { rig async throws in
            #expect(try rig.records(Self.glucoseMeasurement) == Self.keys(1...12))
            let cursor = try #require(try rig.cursor(Self.glucoseMeasurement))
            #expect(cursor.epoch == 0 && cursor.position == 12 && cursor.kind == .sequence)
            let measurements = try rig.samples(Self.glucoseMeasurement)
            #expect(measurements.count == 12, "one glucose sample per record")
            #expect(measurements.allSatisfy { $0.lane == .cold })

            // Contexts: measurements 2, 4, ... 12 carry one (the simulator's contextEvery = 2).
            let contexts = try rig.samples(Self.glucoseContext)
            #expect(Set(contexts.compactMap(\.recordSequence)) == [2, 4, 6, 8, 10, 12])
            for context in contexts {
                let measurement = try #require(measurements.first { $0.recordSequence == context.recordSequence })
                #expect(context.effectiveAt == measurement.effectiveAt, "a context takes its measurement's time")
                #expect(context.epoch == measurement.epoch)
            }
            let storedBefore = await rig.cold.counters.samplesStored

            // Two readings while connected (the meter keeps them for RACP), then a new connection: only 13 and 14.
            try await rig.measure(2)
            try await rig.reconnect()
            let endings = await rig.endings()
            #expect(try rig.records(Self.glucoseMeasurement) == Self.keys(1...14), "\(endings)")
            #expect(try rig.cursor(Self.glucoseMeasurement)?.position == 14)
            let counters = await rig.cold.counters
            #expect(counters.duplicates == 0, "the second connection asked only for what is new")
            #expect(counters.samplesStored > storedBefore)
        }
    }

    /// The meter drops the link after 5 records of the first report: nothing of that answer is stored (it had no
    /// Success response), and the next connection takes all 20, each once.
    @Test(.timeLimit(.minutes(3)))
    func aDropMidTransferResumesWithNothingLostOrDoubled() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 20
        meter.faults.racp.disconnectAfterRecords = 5
        try await withRig(meter) { rig async throws in
            let endings = await rig.endings()
            #expect(endings.contains(.finished(.interrupted(.disconnected, cursor: .start))), "\(endings)")
            #expect(try rig.records(Self.glucoseMeasurement) == Self.keys(1...20))
            #expect(try rig.samples(Self.glucoseMeasurement).count == 20)
            #expect(try rig.cursor(Self.glucoseMeasurement)?.position == 20)
            #expect(await rig.cold.counters.duplicates == 0)
        }
    }

    /// A drop after the cursor already moved: the second report (13, 14, 15) stops after one record; the next
    /// connection resumes at 14.
    @Test(.timeLimit(.minutes(3)))
    func aDropInALaterTransferResumesFromTheCommittedCursor() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 12
        try await withRig(meter) { rig async throws in
            try await rig.measure(3)
            try await rig.harness.simulated.inject("health-racp-disconnect", ["device": rig.device, "after_records": .uint32(1)])
            try await rig.reconnect()  // the first connection after it is dropped by the fault, the next completes
            #expect(try rig.records(Self.glucoseMeasurement) == Self.keys(1...15))
            #expect(try rig.samples(Self.glucoseMeasurement).count == 15)
            #expect(try rig.cursor(Self.glucoseMeasurement)?.position == 15)
            #expect(await rig.cold.counters.duplicates == 0)
        }
    }

    /// The meter's memory is cleared and it numbers from 1 again: the next connection finds its latest record
    /// below the cursor and starts epoch 1, taking the new records 1 and 2 as new readings, not as 1 and 2 again.
    @Test(.timeLimit(.minutes(3)))
    func aMeterWhoseNumberingResetStartsANewEpoch() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 6
        try await withRig(meter) { rig async throws in
            try await rig.harness.simulated.inject("health-sequence-reset", ["device": rig.device, "first_sequence": .uint32(1)])
            try await rig.measure(2)
            try await rig.reconnect()
            let endings = await rig.cold.counters.procedures
            #expect(try rig.records(Self.glucoseMeasurement) == Self.keys(1...6) + Self.keys(1...2, epoch: 1), "\(endings)")
            let epochs = try rig.store.epochs(
                peripheralUid: try #require(try rig.harness.storage.peripherals.peripheral(identityAddress: rig.address)).uid,
                stream: HealthRecordStream(characteristic: Self.glucoseMeasurement))
            #expect(epochs.map(\.epoch) == [0, 1])
            #expect(epochs.map(\.position) == [6, 2])
            #expect(epochs.last?.startReason == .sequenceReset)
            let counters = await rig.cold.counters
            #expect(counters.duplicates == 0, "\(counters.duplicates) duplicates; \(counters.procedures)")
        }
    }

    /// The store fails the first batch (after its samples, before its cursor: the transaction rolls back): the
    /// procedure is abandoned with nothing stored and nothing more asked on that connection, and the next
    /// connection takes all 8 records once from the cursor the store still has (none).
    @Test(.timeLimit(.minutes(3)))
    func aFailedStoreWritesNothingAndTheNextConnectionTakesEverythingOnce() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 8
        let failures = Mutex(1)
        struct PlannedFailure: Error {}
        let faults = HealthStoreFaults(afterSamplesBeforeCursor: { _ in
            if failures.withLock({ remaining in defer { remaining -= 1 }; return remaining > 0 }) { throw PlannedFailure() }
        })
        try await withRig(meter, faults: faults, waitForCompletion: false) { rig async throws in
            try await waitUntil("the procedure abandoned after the failed store", seconds: 60) {
                await rig.endings().contains(.abandoned(cursor: .start))
            }
            #expect(try rig.samples(Self.glucoseMeasurement).isEmpty, "the failed batch wrote no sample")
            #expect(try rig.cursor(Self.glucoseMeasurement) == nil, "nor a cursor")
            try await rig.reconnect()
            #expect(try rig.records(Self.glucoseMeasurement) == Self.keys(1...8))
            #expect(try rig.samples(Self.glucoseMeasurement).count == 8)
            #expect(try rig.cursor(Self.glucoseMeasurement)?.position == 8)
        }
    }

    /// A CGM's records are keyed by their time offset (CGMS §4.12): 15 stored records (minutes 1…15), each once,
    /// the cursor at minute 15.
    @Test(.timeLimit(.minutes(3)))
    func aCGMsStoredRecordsAreTakenOnceByTimeOffset() async throws {
        var cgm = HealthDeviceSettings(kind: .cgm)
        cgm.storedRecords = 15
        cgm.measurementIntervalSeconds = 3_600  // no live record during the test
        try await withRig(cgm) { rig async throws in
            let endings = await rig.cold.counters.procedures
            #expect(try rig.records(Self.cgmMeasurement) == Self.keys(1...15).map { RecordKey(epoch: 0, key: $0.key * 60) }, "\(endings)")
            let cursor = try #require(try rig.cursor(Self.cgmMeasurement))
            #expect(cursor.kind == .timeOffset && cursor.position == 15 * 60 && cursor.epoch == 0)
            #expect(await rig.cold.counters.duplicates == 0)
        }
    }
}
