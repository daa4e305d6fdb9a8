import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Health store: one row per reading, samples and cursor together, cursors only forward")
struct HealthStoreTests {
    struct InjectedFault: Error {}

    @Test("a glucose record that arrives hot, then cold, then cold again after a reconnect is one row")
    func hotThenColdIsOneRow() throws {
        var fixture = try HealthFixture()
        let hot = try fixture.ingest([glucoseSample(sequence: 5, lane: .hot)])
        #expect(hot.storedCount == 1 && hot.cursor == nil)
        // The cold lane reads records 1…5 from the device's memory, 5 included, and moves the cursor past them.
        let cold = try fixture.ingest((1...5).map { glucoseSample(sequence: $0, lane: .cold, receivedAt: simulationStart.plus(milliseconds: 9_000)) }, cursor: glucoseCursor(through: 5))
        #expect(cold.samples.map { if case .stored = $0 { "new" } else { "dup" } } == ["new", "new", "new", "new", "dup"])
        #expect(cold.duplicateCount == 1 && cold.cursor == .started)
        // A reconnect before the success response: the device sends 4…5 again, nothing new.
        let again = try fixture.ingest((4...5).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 5))
        #expect(again.duplicateCount == 2 && again.cursor == .unchanged)
        #expect(try fixture.store.sampleCount() == 5)
        let stored = try #require(try fixture.store.samples(HealthSampleQuery(metricCodes: [HealthMetric.glucose])).first { $0.sample.recordSequence == 5 })
        #expect(stored.sample.lane == .hot, "the first arrival's row stays")
        #expect(stored.dedupKey == HealthDedupKey.make(device: fixture.deviceName, sample: glucoseSample(sequence: 5, lane: .cold)))
    }

    @Test("without a sequence: the same bytes at the same device time are one reading; notified values without a time are each a reading")
    func dedupWithoutSequence() throws {
        var fixture = try HealthFixture()
        let time = "2026-11-01T07:58:00 +01:00"
        #expect(try fixture.ingest(bloodPressureSamples(systolic: 120, diastolic: 80, deviceTime: time, lane: .hot)).storedCount == 2)
        #expect(try fixture.ingest(bloodPressureSamples(systolic: 120, diastolic: 80, deviceTime: time, lane: .cold, receivedAt: simulationStart.plus(milliseconds: 60_000))).duplicateCount == 2)
        // Another reading in the same second (or under a clock never set) differs by its bytes.
        #expect(try fixture.ingest(bloodPressureSamples(systolic: 131, diastolic: 84, deviceTime: time, lane: .cold)).storedCount == 2)
        // No device time: every arrival is a reading, equal values included.
        #expect(try fixture.ingest(bloodPressureSamples(systolic: 120, diastolic: 80, deviceTime: nil, lane: .hot, receivedAt: simulationStart.plus(milliseconds: 1_000))).storedCount == 2)
        #expect(try fixture.ingest(bloodPressureSamples(systolic: 120, diastolic: 80, deviceTime: nil, lane: .hot, receivedAt: simulationStart.plus(milliseconds: 2_000))).storedCount == 2)
        #expect(try fixture.store.sampleCount() == 8)
        // Two values of one metric in one record (RR intervals) are two samples.
        var rr = bloodPressureSamples(systolic: 1, diastolic: 1, deviceTime: nil, lane: .hot)[0]
        rr.metricCode = HealthMetric.rrInterval
        var second = rr
        second.occurrence = 1
        #expect(try fixture.ingest([rr, second]).storedCount == 2)
    }

    @Test("a fault between the samples and the cursor leaves neither")
    func faultBetweenSamplesAndCursor() throws {
        let armed = Locked(false)
        var fixture = try HealthFixture(faults: HealthStoreFaults(afterSamplesBeforeCursor: { _ in
            if armed.withLock({ $0 }) { throw InjectedFault() }
        }))
        try fixture.ingest((1...3).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 3))
        armed.withLock { $0 = true }
        #expect(throws: HealthStoreError.store(StoreError(.other, ""))) {
            try fixture.ingest((4...6).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 6))
        }
        #expect(try fixture.store.sampleCount() == 3)
        #expect(try fixture.store.cursors().map(\.position) == [3])
    }

    @Test("a cursor moving backwards in its epoch refuses the whole batch, typed; the table refuses it too")
    func cursorOnlyForward() throws {
        var fixture = try HealthFixture()
        try fixture.ingest((1...10).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 10))
        let stream = HealthRecordStream(characteristic: HealthCharacteristic.glucose)
        // The batch carries a new record (11) too: refused with the rest, nothing written.
        #expect(throws: HealthStoreError.cursorMovedBackwards(stream, epoch: 0, stored: 10, requested: 7)) {
            try fixture.ingest([glucoseSample(sequence: 11, lane: .cold)], cursor: glucoseCursor(through: 7))
        }
        #expect(throws: HealthStoreError.cursorMovedBackwards(stream, epoch: 0, stored: 10, requested: nil)) {
            try fixture.ingest([], cursor: glucoseCursor(through: nil))
        }
        #expect(try fixture.store.sampleCount() == 10)
        #expect(try fixture.store.cursors().map(\.position) == [10])
        // Equal is no move; forward is.
        #expect(try fixture.ingest([], cursor: glucoseCursor(through: 10)).cursor == .unchanged)
        #expect(try fixture.ingest([glucoseSample(sequence: 11, lane: .cold)], cursor: glucoseCursor(through: 11)).cursor == .advanced(from: 10, to: 11))
        // Any other writer meets the trigger.
        #expect(throws: StoreError(.constraint, "")) {
            try fixture.database.write { db in try db.execute(sql: "UPDATE healthIngestCursor SET position = 3") }
        }
        #expect(throws: StoreError(.constraint, "")) {
            try fixture.database.write { db in try db.execute(sql: "UPDATE healthIngestCursor SET position = NULL") }
        }
        #expect(try fixture.store.cursors().map(\.position) == [11])
    }

    @Test("a sequence reset starts epoch + 1: old numbers are new records, the old epoch is kept and closed")
    func newEpoch() throws {
        var fixture = try HealthFixture()
        let stream = HealthRecordStream(characteristic: HealthCharacteristic.glucose)
        #expect(throws: HealthStoreError.epochSkipped(stream, expected: 0, requested: 1)) {
            try fixture.ingest([], cursor: glucoseCursor(epoch: 1, through: 1, reason: .sequenceReset))
        }
        try fixture.ingest((1...4).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 4))
        #expect(throws: HealthStoreError.epochReasonMissing(stream, epoch: 1)) {
            try fixture.ingest([], cursor: glucoseCursor(epoch: 1, through: 2))
        }
        #expect(throws: HealthStoreError.epochSkipped(stream, expected: 1, requested: 2)) {
            try fixture.ingest([], cursor: glucoseCursor(epoch: 2, through: 2, reason: .sequenceReset))
        }
        // The meter's memory was cleared: its records start again at 1, with other values.
        let reset = try fixture.ingest((1...2).map { glucoseSample(sequence: $0, epoch: 1, lane: .cold, milligramsPerDecilitre: 140) }, cursor: glucoseCursor(epoch: 1, through: 2, reason: .sequenceReset))
        #expect(reset.storedCount == 2 && reset.cursor == .newEpoch(1, reason: .sequenceReset))
        #expect(try fixture.store.sampleCount() == 6)
        #expect(throws: HealthStoreError.epochMovedBackwards(stream, stored: 1, requested: 0)) {
            try fixture.ingest([], cursor: glucoseCursor(epoch: 0, through: 9))
        }
        let epochs = try fixture.store.epochs(peripheralUid: fixture.peripheralUid, stream: stream)
        #expect(epochs.map(\.epoch) == [0, 1] && epochs.map(\.position) == [4, 2] && epochs.map(\.startReason) == [.first, .sequenceReset])
        #expect(try fixture.store.cursors(peripheralUid: fixture.peripheralUid).map(\.epoch) == [1])
        // The closed epoch is never written again, nor an epoch inserted out of order, whoever tries.
        #expect(throws: StoreError(.constraint, "")) {
            try fixture.database.write { db in try db.execute(sql: "UPDATE healthIngestCursor SET position = 99 WHERE epoch = 0") }
        }
        #expect(throws: StoreError(.constraint, "")) {
            try fixture.database.write { db in
                try db.execute(sql: """
                    INSERT INTO healthIngestCursor (peripheralId, characteristic, epoch, positionKind, position, startReason, startedAt, updatedAt)
                    SELECT peripheralId, characteristic, 3, 'sequence', 1, 'sequence-reset', 0, 0 FROM healthIngestCursor LIMIT 1
                    """)
            }
        }
        // A stream keeps its kind of position.
        var timeOffset = glucoseCursor(epoch: 1, through: 3)
        timeOffset.kind = .timeOffset
        #expect(throws: HealthStoreError.cursorKindChanged(stream, stored: .sequence, requested: .timeOffset)) { try fixture.ingest([], cursor: timeOffset) }
    }

    @Test("an unknown peripheral refuses the batch")
    func unknownPeripheral() throws {
        var fixture = try HealthFixture()
        var random = SplitMix64(seed: 3)
        #expect(throws: HealthStoreError.unknownPeripheral(uid: "nobody")) {
            try fixture.store.ingest(HealthIngestBatch(peripheralUid: "nobody", samples: [glucoseSample(sequence: 1, lane: .hot)]), at: simulationStart, using: &random)
        }
        _ = fixture
    }

    @Test("through the shared group commit: a refused health batch is rolled back alone, the others (consumption too) commit")
    func groupCommit() async throws {
        let fixture = try HealthFixture()
        let service = ConsumptionService(database: fixture.database)
        let committer = GroupCommitter(service: service, clock: { simulationStart }, seed: 5)
        let gate = GroupCommitterTests.WriterGate(fixture.database)
        let results = Locked<[Int: Result<HealthIngestOutcome, HealthStoreError>]>([:])
        let batches: [HealthIngestBatch] = [
            HealthIngestBatch(peripheralUid: fixture.peripheralUid, samples: (1...5).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 5)),
            HealthIngestBatch(peripheralUid: fixture.peripheralUid, samples: [glucoseSample(sequence: 5, lane: .hot)]),
            // Backwards after the first: refused, its record 6 not stored.
            HealthIngestBatch(peripheralUid: fixture.peripheralUid, samples: [glucoseSample(sequence: 6, lane: .cold)], cursor: glucoseCursor(through: 2)),
            HealthIngestBatch(peripheralUid: fixture.peripheralUid, samples: (6...7).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 7)),
        ]
        for (index, batch) in batches.enumerated() {
            fixture.store.submit(batch, to: committer) { result in results.withLock { $0[index] = result } }
        }
        committer.submit(PersistBatch(id: 1, items: [.hit(hit("MIX", sequence: 0))])) { _ in }
        gate.open()
        let last = await fixture.store.commit(HealthIngestBatch(peripheralUid: fixture.peripheralUid, samples: []), via: committer)
        #expect(throws: Never.self) { try last.get() }
        let all = results.withLock { $0 }
        #expect(try all[0]?.get().storedCount == 5)
        #expect(try all[1]?.get().duplicateCount == 1)
        #expect(all[2] == .failure(.cursorMovedBackwards(HealthRecordStream(characteristic: HealthCharacteristic.glucose), epoch: 0, stored: 5, requested: 2)))
        #expect(try all[3]?.get().cursor == .advanced(from: 5, to: 7))
        #expect(try fixture.store.sampleCount() == 7)
        #expect(try service.eventCount() == 1)
        #expect(committer.statistics.transactions <= 2)
    }

    @Test("a deletion commits with its tombstone; the device's copy stays a duplicate; a sample changes once")
    func deletion() throws {
        var fixture = try HealthFixture()
        let outcome = try fixture.ingest((1...3).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 3))
        guard case .stored(let uid) = outcome.samples[1] else { Issue.record("not stored"); return }
        let deletion = try fixture.apply(.deletedByTechnician(sampleUid: uid, note: "test strip in control solution"), at: simulationStart.plus(milliseconds: 5_000))
        #expect(deletion.replacementUid == nil)
        #expect(try fixture.store.sample(uid: uid)?.deletedAt == simulationStart.plus(milliseconds: 5_000).nanoseconds)
        #expect(try fixture.store.sampleCount() == 2 && fixture.store.sampleCount(includeDeleted: true) == 3)
        let tombstones = try fixture.store.deletions()
        #expect(tombstones.map(\.uid) == [deletion.deletionUid])
        #expect(tombstones.first?.sampleUid == uid && tombstones.first?.reason == .technician && tombstones.first?.requestedBy == "technician")
        #expect(tombstones.first?.upload.state == .pending)
        #expect(tombstones.first?.sampleDedupKey == HealthDedupKey.make(device: fixture.deviceName, sample: glucoseSample(sequence: 2, lane: .cold)))
        // The meter still holds record 2 and sends it again after a reconnect: it does not come back.
        #expect(try fixture.ingest([glucoseSample(sequence: 2, lane: .cold)], cursor: glucoseCursor(through: 3)).duplicateCount == 1)
        #expect(try fixture.store.sampleCount() == 2)
        #expect(throws: HealthStoreError.sampleAlreadyDeleted(uid: uid)) { try fixture.apply(.deletedByBackend(sampleUid: uid, tombstoneUid: "01890a5d-ac96-774b-bcce-b302099a8201", note: nil, requestedAt: Timestamp(nanoseconds: 1))) }
        #expect(throws: HealthStoreError.unknownSample(uid: "missing")) { try fixture.apply(.vanishedFromDevice(sampleUid: "missing")) }
        // A mark without its tombstone, or cleared, is refused whoever writes it.
        #expect(throws: StoreError(.constraint, "")) {
            try fixture.database.write { db in try db.execute(sql: "UPDATE healthSample SET deletedAt = 1 WHERE deletedAt IS NULL") }
        }
        #expect(throws: StoreError(.constraint, "")) {
            try fixture.database.write { db in try db.execute(sql: "UPDATE healthSample SET deletedAt = NULL WHERE deletedAt IS NOT NULL") }
        }
        let counts = try fixture.store.uploadCounts()
        #expect(counts.samples == [.pending: 3] && counts.deletions == [.pending: 1])
    }

    @Test("a correction stores its replacement with its tombstone, or neither")
    func correction() throws {
        let armed = Locked(true)
        var fixture = try HealthFixture(faults: HealthStoreFaults(afterReplacementBeforeDeletion: {
            if armed.withLock({ $0 }) { throw InjectedFault() }
        }))
        guard case .stored(let uid) = try fixture.ingest([glucoseSample(sequence: 1, lane: .cold)]).samples[0] else { Issue.record("not stored"); return }
        let corrected = glucoseSample(sequence: 1, lane: .cold, milligramsPerDecilitre: 110)
        let change = HealthChange.corrected(sampleUid: uid, replacement: corrected, by: .backend, note: "meter recalibrated")
        #expect(throws: HealthStoreError.store(StoreError(.other, ""))) { try fixture.apply(change) }
        #expect(try fixture.store.sampleCount(includeDeleted: true) == 1 && fixture.store.deletions().isEmpty)
        #expect(try fixture.store.sample(uid: uid)?.deletedAt == nil)

        armed.withLock { $0 = false }
        let outcome = try fixture.apply(change)
        let replacementUid = try #require(outcome.replacementUid)
        let replacement = try #require(try fixture.store.sample(uid: replacementUid))
        #expect(replacement.sample.lane == .change && replacement.sample.value.canonical == HealthDecimal(mantissa: 110, exponent: 0))
        #expect(replacement.dedupKey == HealthDedupKey.correction(of: uid))
        #expect(try fixture.store.samples().map(\.uid) == [replacementUid])
        let tombstone = try #require(try fixture.store.deletions().first)
        #expect(tombstone.reason == .correction && tombstone.requestedBy == "backend" && tombstone.replacementSampleUid == replacementUid)
        // The replacement may be corrected in turn.
        #expect(try fixture.apply(.deletedByTechnician(sampleUid: replacementUid, note: nil)).deletionUid.count == 36)
    }

    @Test("reads: samples by peripheral, metric and time range; cursors per peripheral; values and special values round-trip")
    func reads() throws {
        var fixture = try HealthFixture()
        var random = SplitMix64(seed: 2)
        let other = try PeripheralRegistry(database: fixture.database).register(identityAddress: "C4:00:00:00:00:02", at: simulationStart, using: &random).uid
        try fixture.ingest((0..<10).map { glucoseSample(sequence: $0, lane: .cold) }, cursor: glucoseCursor(through: 9))
        try fixture.ingest(bloodPressureSamples(systolic: 118, diastolic: 79, deviceTime: "2026-11-01T07:00:00", lane: .hot))
        var nan = glucoseSample(sequence: 0, lane: .hot)
        nan.value = .special(.nan, reportedUnit: "kg/L", canonicalUnit: "mg/dL")
        try fixture.store.ingest(HealthIngestBatch(peripheralUid: other, samples: [nan]), at: simulationStart, using: &random)

        let first = glucoseSample(sequence: 0, lane: .cold).effectiveAt
        let window = try fixture.store.samples(HealthSampleQuery(peripheralUid: fixture.peripheralUid, metricCodes: [HealthMetric.glucose], from: first.plus(milliseconds: 120_000), until: first.plus(milliseconds: 300_000)))
        #expect(window.map(\.sample.recordSequence) == [4, 3, 2])
        #expect(window.allSatisfy { $0.peripheralUid == fixture.peripheralUid })
        #expect(window.first?.sample == glucoseSample(sequence: 4, lane: .cold), "every field comes back as stored")
        #expect(try fixture.store.samples(HealthSampleQuery(metricCodes: [HealthMetric.systolic])).map(\.sample.value.canonical) == [HealthDecimal(mantissa: 118, exponent: 0)])
        let special = try #require(try fixture.store.samples(HealthSampleQuery(peripheralUid: other)).first)
        #expect(special.sample.value.status == .nan && special.sample.value.reported == nil && special.sample.value.canonical == nil)
        #expect(try fixture.store.cursors(peripheralUid: other).isEmpty)
        #expect(try fixture.store.cursors().map(\.peripheralUid) == [fixture.peripheralUid])
        #expect(try fixture.store.uploadCounts().samples == [.pending: 13])
    }
}
