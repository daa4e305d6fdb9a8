import Foundation
@testable import TetherStore
import TetherPrimitives

/// Characteristics of the samples these tests store (GATT Assigned Numbers §3.8, 128-bit on the Base UUID).
enum HealthCharacteristic {
    static let glucose = "00002a18-0000-1000-8000-00805f9b34fb"
    static let bloodPressure = "00002a35-0000-1000-8000-00805f9b34fb"
    static let heartRate = "00002a37-0000-1000-8000-00805f9b34fb"
}

/// MDC codes (IEEE 11073-10101) the samples carry.
enum HealthMetric {
    static let glucose = 160_368
    static let systolic = 150_021
    static let diastolic = 150_022
    static let heartRate = 147_842
    static let rrInterval = 147_240
}

/// A database file in a temporary directory with one registered peripheral.
struct HealthFixture {
    let directory: TemporaryDirectory
    let database: GatewayDatabase
    let store: HealthStore
    let peripheralUid: String
    /// The device as its samples' dedup keys name it: its identity address (`HealthDedupKey`).
    let deviceName = "C4:00:00:00:00:01"
    var random = SplitMix64(seed: 14)

    init(faults: HealthStoreFaults = HealthStoreFaults()) throws {
        directory = try TemporaryDirectory()
        database = try GatewayDatabase(path: directory.file("health.sqlite"))
        store = HealthStore(database: database, faults: faults)
        var random = SplitMix64(seed: 1)
        peripheralUid = try PeripheralRegistry(database: database).register(identityAddress: "C4:00:00:00:00:01", at: simulationStart, using: &random).uid
    }

    @discardableResult
    mutating func ingest(_ samples: [HealthSample], cursor: HealthCursorMove? = nil, at now: Timestamp = simulationStart) throws(HealthStoreError) -> HealthIngestOutcome {
        try store.ingest(HealthIngestBatch(peripheralUid: peripheralUid, samples: samples, cursor: cursor), at: now, using: &random)
    }

    @discardableResult
    mutating func apply(_ change: HealthChange, at now: Timestamp = simulationStart) throws(HealthStoreError) -> HealthChangeOutcome {
        try store.apply(change, at: now, using: &random)
    }
}

/// A glucose record (GLS): sequence-numbered, mg/dL reported as kg/L, as a parser would hand it over.
func glucoseSample(sequence: Int64, epoch: Int64 = 0, lane: HealthLane, milligramsPerDecilitre: Int64 = 100, receivedAt: Timestamp = simulationStart) -> HealthSample {
    let minute = Timestamp(nanoseconds: simulationStart.nanoseconds - 3_600_000_000_000 + sequence * 60_000_000_000)
    return HealthSample(
        metricCode: HealthMetric.glucose,
        value: .number(HealthDecimal(mantissa: milligramsPerDecilitre, exponent: -5), unit: "kg/L", canonical: HealthDecimal(mantissa: milligramsPerDecilitre, exponent: 0), unit: "mg/dL"),
        effectiveAt: minute, deviceTime: "2026-11-01T07:\(String(format: "%02d", sequence % 60)):00", timeBasis: .clockSetByGateway, skewMilliseconds: 1200,
        recordSequence: sequence, epoch: epoch, lane: lane, characteristic: HealthCharacteristic.glucose,
        rawBytes: [0x02, UInt8(truncatingIfNeeded: sequence), UInt8(truncatingIfNeeded: sequence >> 8), UInt8(truncatingIfNeeded: milligramsPerDecilitre)],
        parserVersion: 1, receivedAt: receivedAt)
}

/// A blood-pressure record without a sequence number: systolic and diastolic from the same bytes and device time.
func bloodPressureSamples(systolic: Int64, diastolic: Int64, deviceTime: String?, lane: HealthLane, receivedAt: Timestamp = simulationStart) -> [HealthSample] {
    let bytes: [UInt8] = [0x02, UInt8(systolic), 0x00, UInt8(diastolic), 0x00, 0x5A, 0x00]
    return [(HealthMetric.systolic, systolic), (HealthMetric.diastolic, diastolic)].map { metric, value in
        HealthSample(
            metricCode: metric, value: .number(HealthDecimal(mantissa: value, exponent: 0), unit: "mm[Hg]", canonical: HealthDecimal(mantissa: value, exponent: 0), unit: "mm[Hg]"),
            effectiveAt: deviceTime == nil ? receivedAt : simulationStart, deviceTime: deviceTime,
            timeBasis: deviceTime == nil ? .receipt : .localTimeWithOffset, lane: lane, characteristic: HealthCharacteristic.bloodPressure,
            rawBytes: bytes, parserVersion: 1, receivedAt: receivedAt)
    }
}

func glucoseCursor(epoch: Int64 = 0, through position: Int64?, reason: HealthEpochReason? = nil) -> HealthCursorMove {
    HealthCursorMove(stream: HealthRecordStream(characteristic: HealthCharacteristic.glucose), epoch: epoch, position: position, epochReason: reason)
}
