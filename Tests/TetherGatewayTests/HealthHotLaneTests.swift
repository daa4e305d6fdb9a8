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

@Suite("The health hot lane: a cuff's readings decoded, timed and stored once; intermediates live only")
struct HealthHotLaneTests {
    static let bloodPressureMeasurement = "00002a35-0000-1000-8000-00805f9b34fb"

    /// A hot lane on a fresh gateway database in a directory of its own (the caller removes it), with `address`
    /// registered as a health peripheral.
    static func lane(for address: String) throws -> (directory: URL, database: GatewayDatabase, lane: HealthHotLane) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-hot-lane-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let database = try GatewayDatabase(path: directory.appendingPathComponent("gateway.sqlite").path)
        let committer = GroupCommitter(service: ConsumptionService(database: database))
        var random = SystemRandomNumberGenerator()
        try PeripheralRegistry(database: database).recordClassification(
            kinds: [.health], services: [], identityAddress: address, at: Timestamp(nanoseconds: 1), using: &random)
        return (directory, database, HealthHotLane(database: database, committer: committer))
    }

    /// A cuff with three stored readings and a clock an hour ahead, through a real gateway and its store. Every reading
    /// becomes its samples (systolic, diastolic, mean arterial pressure: MDC 150021/150022/150023) once, in the hot
    /// lane, with the raw bytes and parser version; its time is corrected by the clock reading the session took (a
    /// reading stored with the cuff's own time would lie an hour in the future). A live measurement adds one reading,
    /// and its intermediate cuff pressures are shown but never stored.
    @Test(.timeLimit(.minutes(2)))
    func aCuffsReadingsAreStoredOnceWithCorrectedTimes() async throws {
        var simulator = GatewayHarness.configuration(devices: 1)
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 3
        cuff.clockSkewSeconds = 3_600
        simulator.devices[0].health = cuff
        let lane = Mutex<HealthHotLane?>(nil)
        try await GatewayHarness.with(simulator: simulator, health: { storage in
            let made = HealthHotLane(database: storage.database, committer: storage.committer)
            lane.withLock { $0 = made }
            return made
        }) { harness in
            let hot = try #require(lane.withLock { $0 })
            let store = HealthStore(database: harness.storage.database)
            let address = GatewayHarness.address(1)
            _ = try await harness.gateway.pair(address: address, delegate: RejectingDelegate())
            try await waitUntil("three readings stored") {
                Set(((try? store.samples()) ?? []).compactMap(\.sample.rawBytes)).count >= 3
            }

            var samples = try store.samples()
            #expect(Set(samples.compactMap(\.sample.rawBytes)).count == 3)
            for record in Dictionary(grouping: samples, by: { $0.sample.rawBytes ?? [] }).values {
                let codes = Set(record.map(\.sample.metricCode))
                #expect(codes.isSuperset(of: [150_021, 150_022, 150_023]), "\(codes)")
                #expect(record.count == codes.count, "one sample per metric and reading")
            }
            for sample in samples.map(\.sample) {
                #expect(sample.characteristic == Self.bloodPressureMeasurement)
                #expect(sample.lane == .hot)
                #expect(sample.parserVersion == HealthDecoder.parserVersion)
                // Pressures as the cuff reported them (its unit flag says mmHg); its pulse rate per minute.
                #expect(sample.value.reportedUnit == (sample.metricCode == 149_546 ? "/min" : "mm[Hg]"), "\(sample.metricCode)")
                #expect(sample.timeBasis == .coincidentClockReading)
                #expect(abs((sample.skewMilliseconds ?? 0) - 3_600_000) <= 5_000, "skew \(String(describing: sample.skewMilliseconds))")
                // Taken before it was received, in the gateway's time: not an hour in the future.
                #expect(sample.effectiveAt <= sample.receivedAt.advanced(by: .seconds(5)), "\(sample)")
                #expect(sample.deviceTime != nil)
            }

            let before = samples.count
            // The session subscribes the measurement first, whose indications carry the stored readings at once; a
            // measurement taken before Intermediate Cuff Pressure is subscribed too would show no intermediates.
            let cuffDevice = try #require(await harness.simulated.simulator.device(at: SimulatedBlueZ.devicePath(address)))
            try await waitUntil("intermediate cuff pressure subscribed") { await cuffDevice.isHealthSubscribed(0x2A36) }
            // And the gateway has finished setting the link up (a fresh-clone CI run, every suite at once on two cores,
            // once saw no intermediates: a measurement taken while the set-up was still running, which a set-up
            // abandoned and made again would lose). Values of a link set up are forwarded as they come.
            try await waitUntil("the cuff's link set up", seconds: 60) { await harness.gateway.device(address)?.state == .connected }
            let connectsBefore = try await harness.simulated.statistics(address)["connect_calls"]?.uint32Value
            let taken = try await harness.simulated.control(
                "TakeMeasurement", [.objectPath(SimulatedBlueZ.devicePath(address)), .variantDictionary([:])])
            #expect(taken == [.bool(true)])
            try await waitUntil("the live reading stored") {
                Set(((try? store.samples()) ?? []).compactMap(\.sample.rawBytes)).count >= 4
            }
            samples = try store.samples()
            #expect(Set(samples.compactMap(\.sample.rawBytes)).count == 4)
            #expect(samples.count > before)
            #expect(samples.allSatisfy { $0.sample.characteristic == Self.bloodPressureMeasurement })
            // The lane counts a commit once the committer has answered it, which can be after the row is readable.
            let stored = samples.count
            try await waitUntil("the lane has counted every stored sample") { await hot.counters.samplesStored >= stored }
            // The cuff pressures travel on their own path (Intermediate Cuff Pressure notifies: an AcquireNotify
            // socket), the measurement on another (an indication: a D-Bus signal), so the measurement can be stored
            // before they are counted; a full run of every suite on two cores once checked too early and saw none.
            let seen = (try? await waitUntil("the live measurement's cuff pressures counted", seconds: 30) {
                await hot.counters.intermediates > 0
            }) != nil
            let counters = await hot.counters
            let connectsAfter = try await harness.simulated.statistics(address)["connect_calls"]?.uint32Value
            #expect(
                seen && counters.intermediates > 0,
                "the live measurement's cuff pressures were not seen (Connect calls \(String(describing: connectsBefore)) before the measurement, \(String(describing: connectsAfter)) after; \(counters))")
            #expect(counters.refused == 0 && counters.commitFailures == 0, "\(counters)")
            #expect(counters.samplesStored == samples.count)
            #expect(counters.duplicates == 0)
        }
    }

    /// The same value arriving twice (a device resending after a lost confirmation, a reconnect) is one row: the
    /// store's dedup key refuses the second and the lane counts it a duplicate.
    @Test func aResentReadingIsStoredOnce() async throws {
        let address = "C0:54:45:00:00:09"
        let (directory, database, lane) = try Self.lane(for: address)
        defer { try? FileManager.default.removeItem(at: directory) }
        // BLS §3.1 worked by hand: flags 0x02 (mmHg, time stamp), 120 / 80 / 93 mmHg as SFLOAT with exponent 0,
        // 2026-11-24 08:30:00.
        let bytes: [UInt8] = [0x02, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00, 0xEA, 0x07, 0x0B, 0x18, 0x08, 0x1E, 0x00]
        let value = HealthCharacteristicValue(
            address: address, link: 1, service: .bloodPressure, characteristic: 0x2A35, bytes: bytes,
            receivedAt: Timestamp(nanoseconds: 1_795_509_000_000_000_000))
        await lane.linkStarted(address: address, link: 1, clock: DeviceClockFacts(setting: .setByGatewayInUTC))
        await lane.received(value)
        await lane.received(value)
        let samples = try HealthStore(database: database).samples()
        #expect(samples.count == 3)
        #expect(Set(samples.map(\.sample.metricCode)) == [150_021, 150_022, 150_023])
        #expect(samples.allSatisfy { $0.sample.timeBasis == .clockSetByGateway })
        // 2026-11-24T08:30:00Z (date -u -d 2026-11-24T08:30:00Z +%s = 1795509000).
        #expect(samples.allSatisfy { $0.sample.effectiveAt == Timestamp(nanoseconds: 1_795_509_000_000_000_000) })
        let counters = await lane.counters
        #expect(counters.samplesStored == 3 && counters.duplicates == 3, "\(counters)")
    }

    /// The gateway wrote the clock (docs/design/health.md, "The time-write rule"): a value received before the
    /// write keeps the facts read before it, even when the lane hears of it after the switch; one received after
    /// is timed by the clock the gateway set.
    @Test func aClockWriteSwitchesTheFactsAtTheWriteByTimeOfReceipt() async throws {
        let address = "C0:54:45:00:00:0A"
        let (directory, database, lane) = try Self.lane(for: address)
        defer { try? FileManager.default.removeItem(at: directory) }
        func at(_ hours: Int64, _ minutes: Int64, _ seconds: Int64) -> Timestamp {
            // 2026-11-24T00:00:00Z = 1795478400 (date -u -d 2026-11-24 +%s).
            Timestamp(nanoseconds: (1_795_478_400 + hours * 3600 + minutes * 60 + seconds) * 1_000_000_000)
        }
        // Read at connection: the cuff's clock an hour ahead (09:30:00 when the gateway's is 08:30:00).
        let before = DeviceClockFacts(reading: .init(deviceTime: DeviceDateTime(year: 2026, month: 11, day: 24, hours: 9, minutes: 30, seconds: 0), receivedAt: at(8, 30, 0)))
        await lane.linkStarted(address: address, link: 1, clock: before)
        // Written at 08:31:00: set in UTC.
        let after = DeviceClockFacts(setting: .setByGatewayInUTC, reading: .init(deviceTime: DeviceDateTime(year: 2026, month: 11, day: 24, hours: 8, minutes: 31, seconds: 0), receivedAt: at(8, 31, 0)))
        await lane.clockChanged(address: address, link: 1, clock: after, at: at(8, 31, 0))
        // BLS §3.1 by hand: flags 0x02 (mmHg, time stamp), 120 / 80 / 93 mmHg, then the stamp. Received at 08:30:30,
        // stamped 09:30:10 by the old clock; handed to the lane after the switch.
        let old: [UInt8] = [0x02, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00, 0xEA, 0x07, 0x0B, 0x18, 0x09, 0x1E, 0x0A]
        // Received at 08:32:05, stamped 08:32:00 by the clock the gateway set.
        let new: [UInt8] = [0x02, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00, 0xEA, 0x07, 0x0B, 0x18, 0x08, 0x20, 0x00]
        await lane.received(HealthCharacteristicValue(address: address, link: 1, service: .bloodPressure, characteristic: 0x2A35, bytes: old, receivedAt: at(8, 30, 30)))
        await lane.received(HealthCharacteristicValue(address: address, link: 1, service: .bloodPressure, characteristic: 0x2A35, bytes: new, receivedAt: at(8, 32, 5)))
        let samples = try HealthStore(database: database).samples().map(\.sample)
        let olds = samples.filter { $0.rawBytes == old }
        let news = samples.filter { $0.rawBytes == new }
        #expect(olds.count == 3 && news.count == 3)
        #expect(olds.allSatisfy { $0.timeBasis == .coincidentClockReading && $0.effectiveAt == at(8, 30, 10) }, "\(olds)")
        #expect(news.allSatisfy { $0.timeBasis == .clockSetByGateway && $0.effectiveAt == at(8, 32, 0) }, "\(news)")
    }

    /// A connection's last values can reach the lane after the device's next connection started (HealthSession reads
    /// a stream to its end after its link dropped). Each is timed with what its own connection read of the clock:
    /// here the first connection saw the cuff's clock an hour ahead and the second after the cuff was corrected.
    @Test func aLateValueOfAnEndedLinkKeepsItsLinksClock() async throws {
        let address = "C0:54:45:00:00:0B"
        let (directory, database, lane) = try Self.lane(for: address)
        defer { try? FileManager.default.removeItem(at: directory) }
        func at(_ hours: Int64, _ minutes: Int64, _ seconds: Int64) -> Timestamp {
            // 2026-11-24T00:00:00Z = 1795478400 (date -u -d 2026-11-24 +%s).
            Timestamp(nanoseconds: (1_795_478_400 + hours * 3600 + minutes * 60 + seconds) * 1_000_000_000)
        }
        // Link 1 read the cuff's clock an hour ahead (09:30:00 at the gateway's 08:30:00); link 2 read it right.
        let ahead = DeviceClockFacts(reading: .init(deviceTime: DeviceDateTime(year: 2026, month: 11, day: 24, hours: 9, minutes: 30, seconds: 0), receivedAt: at(8, 30, 0)))
        let right = DeviceClockFacts(reading: .init(deviceTime: DeviceDateTime(year: 2026, month: 11, day: 24, hours: 8, minutes: 40, seconds: 0), receivedAt: at(8, 40, 0)))
        await lane.linkStarted(address: address, link: 1, clock: ahead)
        await lane.linkStarted(address: address, link: 2, clock: right)
        // BLS §3.1 by hand: flags 0x02 (mmHg, time stamp), 120 / 80 / 93 mmHg, stamped 09:30:10 by link 1's clock.
        let late: [UInt8] = [0x02, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00, 0xEA, 0x07, 0x0B, 0x18, 0x09, 0x1E, 0x0A]
        await lane.received(HealthCharacteristicValue(address: address, link: 1, service: .bloodPressure, characteristic: 0x2A35, bytes: late, receivedAt: at(8, 30, 30)))
        await lane.linkEnded(address: address, link: 1)
        // Stamped 08:41:00 by link 2's clock.
        let current: [UInt8] = [0x02, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00, 0xEA, 0x07, 0x0B, 0x18, 0x08, 0x29, 0x00]
        await lane.received(HealthCharacteristicValue(address: address, link: 2, service: .bloodPressure, characteristic: 0x2A35, bytes: current, receivedAt: at(8, 41, 5)))
        let samples = try HealthStore(database: database).samples().map(\.sample)
        let lates = samples.filter { $0.rawBytes == late }
        let currents = samples.filter { $0.rawBytes == current }
        #expect(lates.count == 3 && currents.count == 3)
        #expect(lates.allSatisfy { $0.timeBasis == .coincidentClockReading && $0.effectiveAt == at(8, 30, 10) }, "\(lates)")
        #expect(currents.allSatisfy { $0.timeBasis == .coincidentClockReading && $0.effectiveAt == at(8, 41, 0) }, "\(currents)")
    }
}
