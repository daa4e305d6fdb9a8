import Foundation
import TetherPrimitives
import TetherStore

/// Fills a gateway's health tables with `count` samples through the real write path: `HealthStore` batches committed
/// through the shared `GroupCommitter`, as the cold lane commits a RACP transfer (its samples and its cursor move in
/// one transaction) and the hot lane an indication (one value's samples, no cursor). Each device keeps one batch in
/// flight, the next submitted when the last is durable, as a lane does.
///
/// The devices are a realistic mix, one kind in four: glucose meters (GLS records by sequence number, a Glucose
/// Measurement Context with carbohydrate every fourth record), CGMs (CGMS records by time offset, one a minute), pulse
/// oximeters (PLXS spot-checks: SpO2 and pulse rate) and blood pressure cuffs (BLS indications: systolic, diastolic,
/// mean and pulse, keyed by device time and bytes). Every device is registered with its Device Information strings;
/// every sample carries the characteristic value's raw bytes, varying with the record so that no two are alike.
struct HealthSeed {
    var count: Int
    var devices: Int
    /// Records per cold-lane commit (one RACP answer).
    var recordsPerBatch: Int

    enum Kind: Int, CaseIterable {
        case glucoseMeter, cgm, pulseOximeter, bloodPressureCuff

        var characteristic: String {
            switch self {
            case .glucoseMeter: Characteristic.glucose
            case .cgm: Characteristic.cgm
            case .pulseOximeter: Characteristic.spotCheck
            case .bloodPressureCuff: Characteristic.bloodPressure
            }
        }

        /// Whether its records come by RACP through the cold lane (with a cursor move), or as indications.
        var cold: Bool { self != .bloodPressureCuff }

        var model: (manufacturer: String, model: String) {
            switch self {
            case .glucoseMeter: ("Roche", "Accu-Chek Guide")
            case .cgm: ("Dexcom", "G7")
            case .pulseOximeter: ("Nonin", "3230")
            case .bloodPressureCuff: ("OMRON", "BP7450")
            }
        }
    }

    enum Characteristic {
        static let glucose = "00002a18-0000-1000-8000-00805f9b34fb"
        static let glucoseContext = "00002a34-0000-1000-8000-00805f9b34fb"
        static let cgm = "00002aa7-0000-1000-8000-00805f9b34fb"
        static let spotCheck = "00002a5e-0000-1000-8000-00805f9b34fb"
        static let bloodPressure = "00002a35-0000-1000-8000-00805f9b34fb"
    }

    struct Outcome {
        var stored: Int
        var duplicates: Int
        var failures: Int
        var batches: Int
        var transactions: Int
    }

    /// 2026-11-01T08:00:00Z, as `GatewayFixture.start`.
    static let start = Timestamp(nanoseconds: (1_793_491_200 + 8 * 3600) * 1_000_000_000)

    /// The samples each device is to hold: `count` split evenly, the first devices one more.
    func quotas() -> [Int] {
        (0..<devices).map { count / devices + ($0 < count % devices ? 1 : 0) }
    }

    /// Checks that every stream's keys fit the uint16 RACP key space in one epoch (GLS §3.106 sequence number,
    /// CGMS §3.1 time offset): the seed never starts a new epoch.
    func validate() throws {
        guard devices >= Kind.allCases.count, recordsPerBatch >= 1 else {
            throw ServerChild.Failure(description: "--health-devices must be at least \(Kind.allCases.count) and --health-records-per-batch at least 1")
        }
        guard (quotas().first ?? 0) <= 60_000 else {
            throw ServerChild.Failure(description: "more than 60,000 samples per device overflows a RACP key: raise --health-devices to \(count / 60_000 + 1) or more")
        }
    }

    /// Registers the devices and commits every batch; returns what the store said.
    func run(database: GatewayDatabase) async throws -> Outcome {
        try validate()
        let registry = PeripheralRegistry(database: database)
        var random = SplitMix64(seed: 21)
        var streams: [(uid: String, kind: Kind, quota: Int)] = []
        for (index, quota) in quotas().enumerated() {
            let kind = Kind(rawValue: index % Kind.allCases.count) ?? .glucoseMeter
            let address = String(format: "C4:10:00:00:%02X:%02X", index / 256, index % 256)
            let peripheral = try registry.register(identityAddress: address, at: Self.start, using: &random)
            try registry.recordDeviceInformation(
                DeviceInformation(
                    manufacturerName: kind.model.manufacturer, modelNumber: kind.model.model, serialNumber: String(format: "SN%08d", 4_200_000 + index),
                    firmwareRevision: "2.\(index % 7).1"),
                identityAddress: address, at: Self.start, using: &random)
            streams.append((peripheral.uid, kind, quota))
        }

        let committer = GroupCommitter(service: ConsumptionService(database: database), seed: 22)
        let store = HealthStore(database: database)
        let recordsPerBatch = recordsPerBatch
        let totals = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for (index, stream) in streams.enumerated() {
                group.addTask {
                    var outcome = Outcome(stored: 0, duplicates: 0, failures: 0, batches: 0, transactions: 0)
                    for batch in Self.batches(uid: stream.uid, kind: stream.kind, device: index, quota: stream.quota, recordsPerBatch: recordsPerBatch) {
                        switch await store.commit(batch, via: committer) {
                        case .success(let result):
                            outcome.stored += result.storedCount
                            outcome.duplicates += result.duplicateCount
                        case .failure(let error):
                            outcome.failures += 1
                            throw ServerChild.Failure(description: "seeding health samples: \(error)")
                        }
                        outcome.batches += 1
                    }
                    return outcome
                }
            }
            return try await group.reduce(into: Outcome(stored: 0, duplicates: 0, failures: 0, batches: 0, transactions: 0)) { total, one in
                total.stored += one.stored
                total.duplicates += one.duplicates
                total.failures += one.failures
                total.batches += one.batches
            }
        }
        var outcome = totals
        outcome.transactions = committer.statistics.transactions
        return outcome
    }

    /// One device's batches, lazily: cold-lane transfers of `recordsPerBatch` records with their cursor move, or one
    /// indication per batch for a cuff. The last record is cut short when the quota ends inside it.
    static func batches(uid: String, kind: Kind, device: Int, quota: Int, recordsPerBatch: Int) -> AnySequence<HealthIngestBatch> {
        AnySequence { () -> AnyIterator<HealthIngestBatch> in
            var left = quota
            var key: Int64 = 0
            return AnyIterator {
                guard left > 0 else { return nil }
                var samples: [HealthSample] = []
                let records = kind.cold ? recordsPerBatch : 1
                for _ in 0..<records where left > 0 {
                    key += 1
                    let record = Self.samples(kind: kind, device: device, key: key).prefix(left)
                    samples += record
                    left -= record.count
                }
                let move =
                    kind.cold
                    ? HealthCursorMove(stream: HealthRecordStream(characteristic: kind.characteristic), kind: kind == .cgm ? .timeOffset : .sequence, epoch: 0, position: key)
                    : nil
                return HealthIngestBatch(peripheralUid: uid, samples: samples, cursor: move)
            }
        }
    }

    /// The samples of record `key` of a device: values vary with the record and the device, and so do the bytes.
    static func samples(kind: Kind, device: Int, key: Int64) -> [HealthSample] {
        let variation = Int64(device * 7) + key
        let low = UInt8(truncatingIfNeeded: key)
        let high = UInt8(truncatingIfNeeded: key >> 8)
        let minute = UInt8(truncatingIfNeeded: key % 60)
        let hour = UInt8(truncatingIfNeeded: (key / 60) % 24)
        let taken = start.advanced(by: .seconds(key * 60))
        let received = start.advanced(by: .seconds(key * 60 + 45))
        func sample(
            _ metric: Int, _ reported: HealthDecimal, _ reportedUnit: String, _ canonical: HealthDecimal, _ canonicalUnit: String,
            characteristic: String, bytes: [UInt8], deviceTime: String?, basis: HealthTimeBasis, sequence: Int64?, lane: HealthLane, user: Int? = nil
        ) -> HealthSample {
            HealthSample(
                metricCode: metric, value: .number(reported, unit: reportedUnit, canonical: canonical, unit: canonicalUnit), effectiveAt: taken,
                deviceTime: deviceTime, timeBasis: basis, skewMilliseconds: 840 + Int64(device), userIndex: user, recordSequence: sequence,
                lane: lane, characteristic: characteristic, rawBytes: bytes, parserVersion: 1, receivedAt: received)
        }
        let deviceTime = String(format: "2026-11-%02d %02d:%02d:00", 1 + Int(key / 1440) % 28, Int(hour), Int(minute))
        switch kind {
        case .glucoseMeter:
            // GLS 0x2A18: flags, sequence, base time, time offset, concentration (kg/L SFLOAT), type/location (15 B).
            let milligrams = 70 + variation % 180
            let glucose = sample(
                160_368, HealthDecimal(mantissa: milligrams, exponent: -5), "kg/L", HealthDecimal(mantissa: milligrams, exponent: 0), "mg/dL",
                characteristic: Characteristic.glucose,
                bytes: [0x13, low, high, 0xEA, 0x07, 0x0B, 0x01, hour, minute, 0x00, 0x00, 0x00, UInt8(truncatingIfNeeded: milligrams), 0xB0, 0x11],
                deviceTime: deviceTime, basis: .clockSetByGateway, sequence: key, lane: .cold)
            guard key % 4 == 0 else { return [glucose] }
            // GLS 0x2A34 context: flags, sequence, carbohydrate ID and grams (SFLOAT, kg exponent -3).
            let grams = 20 + variation % 60
            let carbohydrate = sample(
                8_417_764, HealthDecimal(mantissa: grams, exponent: -3), "kg", HealthDecimal(mantissa: grams, exponent: 0), "g",
                characteristic: Characteristic.glucoseContext, bytes: [0x01, low, high, 0x01, UInt8(truncatingIfNeeded: grams), 0xD0],
                deviceTime: deviceTime, basis: .clockSetByGateway, sequence: key, lane: .cold)
            return [glucose, carbohydrate]
        case .cgm:
            // CGMS 0x2AA7: size, flags, glucose (SFLOAT mg/dL), time offset, E2E-CRC (8 B).
            let milligrams = 80 + variation % 150
            return [
                sample(
                    160_212, HealthDecimal(mantissa: milligrams, exponent: 0), "mg/dL", HealthDecimal(mantissa: milligrams, exponent: 0), "mg/dL",
                    characteristic: Characteristic.cgm, bytes: [0x08, 0x00, UInt8(truncatingIfNeeded: milligrams), 0x00, low, high, minute, hour],
                    deviceTime: "offset \(key) min", basis: .cgmSessionStart, sequence: key, lane: .cold)
            ]
        case .pulseOximeter:
            // PLXS 0x2A5E: flags, SpO2, PR, timestamp, measurement status, device status, pulse amplitude index (19 B).
            let saturation = 93 + variation % 7
            let pulse = 55 + variation % 50
            let bytes: [UInt8] = [
                0x1F, UInt8(truncatingIfNeeded: saturation), 0x00, UInt8(truncatingIfNeeded: pulse), 0x00, 0xEA, 0x07, 0x0B, 0x01, hour, minute,
                low, 0x00, 0x00, 0x00, 0x00, high, 0x2C, 0xF0,
            ]
            return [
                sample(
                    150_456, HealthDecimal(mantissa: saturation, exponent: 0), "%", HealthDecimal(mantissa: saturation, exponent: 0), "%",
                    characteristic: Characteristic.spotCheck, bytes: bytes, deviceTime: deviceTime, basis: .clockSetByGateway, sequence: key, lane: .cold),
                sample(
                    149_530, HealthDecimal(mantissa: pulse, exponent: 0), "/min", HealthDecimal(mantissa: pulse, exponent: 0), "/min",
                    characteristic: Characteristic.spotCheck, bytes: bytes, deviceTime: deviceTime, basis: .clockSetByGateway, sequence: key, lane: .cold),
            ]
        case .bloodPressureCuff:
            // BLS 0x2A35: flags, systolic, diastolic, mean (kPa SFLOAT), timestamp, pulse rate, user ID (17 B).
            let systolic = 105 + variation % 50
            let diastolic = 65 + variation % 30
            let mean = (systolic + 2 * diastolic) / 3
            let pulse = 55 + variation % 45
            let bytes: [UInt8] = [
                0x1E, UInt8(truncatingIfNeeded: systolic), 0x00, UInt8(truncatingIfNeeded: diastolic), 0x00, UInt8(truncatingIfNeeded: mean), 0x00,
                0xEA, 0x07, 0x0B, 0x01, hour, minute, low, UInt8(truncatingIfNeeded: pulse), high, 0x01,
            ]
            return [(150_021, systolic), (150_022, diastolic), (150_023, mean)].map { metric, value in
                sample(
                    metric, HealthDecimal(mantissa: value, exponent: 0), "mm[Hg]", HealthDecimal(mantissa: value, exponent: 0), "mm[Hg]",
                    characteristic: Characteristic.bloodPressure, bytes: bytes, deviceTime: deviceTime, basis: .localTimeWithOffset, sequence: nil,
                    lane: .hot, user: 1)
            } + [
                sample(
                    149_546, HealthDecimal(mantissa: pulse, exponent: 0), "/min", HealthDecimal(mantissa: pulse, exponent: 0), "/min",
                    characteristic: Characteristic.bloodPressure, bytes: bytes, deviceTime: deviceTime, basis: .localTimeWithOffset, sequence: nil,
                    lane: .hot, user: 1)
            ]
        }
    }
}
