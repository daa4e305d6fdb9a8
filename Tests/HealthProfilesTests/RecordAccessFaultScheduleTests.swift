import Testing
import TetherPrimitives
@testable import HealthProfiles

/// The RACP client against a simulated device under a seeded schedule of faults, connection after connection:
/// disconnects at every point of a transfer, 0xFE, Server Busy, stalls, records lost once, duplicated and reversed,
/// new readings, sequence resets and wraparound. Invariants (issue 14, item 2): nothing lost or doubled across
/// resumes, the cursor never moves back within an epoch, and (epoch, key) is never committed twice.
@Suite struct RecordAccessFaultScheduleTests {
    /// A disconnect after every possible number of delivered events, then a clean connection.
    @Test func aDisconnectAtEveryPointOfATransferLosesAndDoublesNothing() {
        var device = SimulatedRecordDevice()
        device.measure(count: 15)
        // count response + 15 records + success, and a second transfer's worth after new readings.
        for cut in 0...18 {
            var harness = RecordAccessHarness(device: device)
            harness.connect(ConnectionFaults(disconnectAfter: cut))
            harness.device.measure(count: 3)
            harness.connect(ConnectionFaults(disconnectAfter: cut / 2))
            harness.connect()
            #expect(harness.missingReadings.isEmpty, "cut at \(cut)")
            #expect(harness.violations.isEmpty, "cut at \(cut): \(harness.violations)")
        }
    }

    @Test(arguments: [RecordKeyKind.sequenceNumber, .timeOffset])
    func seededFaultSchedules(keys: RecordKeyKind) {
        var failures = 0
        for seed in UInt64(0)..<400 {
            var random = SplitMix64(seed: seed &* 0x9E37_79B9 &+ (keys == .timeOffset ? 1 : 0))
            var device = SimulatedRecordDevice()
            device.keys = keys
            device.step = keys == .timeOffset ? 5 : 1
            device.capacity = [40, 200, 1_000][Int.random(in: 0..<3, using: &random)]
            // Some devices start close to the top of the uint16 range, so that they wrap during the run.
            device.nextKey = random.chance(0.3) ? UInt16.max - UInt16(Int.random(in: 0..<60, using: &random)) * device.step : device.step
            device.measure(count: Int.random(in: 0..<60, using: &random))
            var harness = RecordAccessHarness(
                device: device,
                configuration: RecordAccessConfiguration(keys: keys, asksForCountFirst: keys == .timeOffset || random.chance(0.7), seed: seed))
            var resetSeenFrom: UInt32?  // a reset the gateway has not detected yet, and the epoch it happened in
            for _ in 0..<Int.random(in: 1..<12, using: &random) {
                // Between connections the device measures, and now and then is reset (or starts a new session).
                var readings = Int.random(in: 0..<25, using: &random)
                if let epoch = resetSeenFrom {
                    if harness.cursor.epoch > epoch { resetSeenFrom = nil }
                    // Until the gateway has seen a reset, the new numbering stays below its cursor: past it, keys
                    // alone cannot tell a reset device from one that was not (see docs/design/health.md).
                    else if let last = harness.cursor.last {
                        readings = min(readings, max(0, (Int(last) - Int(harness.device.nextKey)) / Int(harness.device.step)))
                    }
                }
                harness.device.measure(count: readings)
                if resetSeenFrom == nil, harness.cursor.last.map({ $0 > 2 * harness.device.step }) ?? false, random.chance(0.08) {
                    harness.device.reset(numberingFrom: keys == .timeOffset ? 0 : UInt16(Int.random(in: 0...1, using: &random)))
                    resetSeenFrom = harness.cursor.epoch
                }
                if random.chance(0.1) { harness.device.supportsGreaterOrEqual.toggle() }
                harness.connect(Self.faults(&random, records: harness.device.records, countsFirst: harness.configuration.asksForCountFirst, keys: keys))
            }
            // Resets lose what the device erased before it was fetched; only what it still holds must be stored.
            for _ in 0..<3 { harness.connect() }
            if !harness.missingReadings.isEmpty || !harness.violations.isEmpty {
                failures += 1
                if failures <= 3 {
                    Issue.record("seed \(seed): missing \(harness.missingReadings.prefix(5)), violations \(harness.violations.prefix(3)), cursor \(harness.cursor)")
                }
            }
        }
        #expect(failures == 0)
    }

    static func faults(_ random: inout SplitMix64, records: [SimulatedRecordDevice.Record], countsFirst: Bool, keys: RecordKeyKind) -> ConnectionFaults {
        var faults = ConnectionFaults()
        if random.chance(0.3) { faults.disconnectAfter = Int.random(in: 0..<(records.count + 4), using: &random) }
        if random.chance(0.2) { faults.procedureInProgress = Int.random(in: 1...5, using: &random) }
        if random.chance(0.2) { faults.serverBusy = Int.random(in: 1...3, using: &random) }
        if random.chance(0.15) { faults.stall = (request: Int.random(in: 1...3, using: &random), after: Int.random(in: 0..<10, using: &random)) }
        // A CGM record lost in transit is caught only by the count (RecordAccessClientTests); so is the first record
        // of a transfer from no cursor (10,000 schedules with the count on pass; without it this one loss is unseen).
        if keys == .sequenceNumber, countsFirst, random.chance(0.2), let record = records.randomElement(using: &random) { faults.loseOnce = record.key }
        if random.chance(0.2) { faults.duplicateAndReverse = Int.random(in: 1...3, using: &random) }
        return faults
    }
}
