import Testing
@testable import TetherStore
import TetherPrimitives

/// `HealthStore.recordAcknowledgements`: the facts of the cold lane's deletion rule. A key is acknowledged only when
/// every sample stored under it (its measurement's and its context's) is `uploaded`; other epochs, other
/// characteristics and keys above `through` are not read.
@Suite struct HealthRecordAcknowledgementTests {
    static let context = "00002a34-0000-1000-8000-00805f9b34fb"

    @Test func aKeyIsAcknowledgedOnlyWhenEverySampleUnderItIsUploaded() throws {
        var fixture = try HealthFixture()
        var samples = (1...5).map { glucoseSample(sequence: $0, lane: .cold) }
        var context = glucoseSample(sequence: 2, lane: .cold)
        context.characteristic = Self.context
        context.metricCode = 68_000
        samples.append(context)
        samples.append(glucoseSample(sequence: 1, epoch: 1, lane: .cold))  // a later epoch's record 1
        try fixture.ingest(samples)

        // The backend acknowledges 1, 2 and 4's measurements and epoch 1's record; 2's context and 3 fail.
        let queue = HealthUploadQueue(database: fixture.database)
        var random = SplitMix64(seed: 5)
        let lease = try #require(try queue.claimSamples(limit: 100, now: simulationStart, using: &random))
        let acknowledged = lease.items.filter { item in
            let sample = item.record.sample
            return sample.characteristic == HealthCharacteristic.glucose && (sample.epoch == 1 || [1, 2, 4].contains(sample.recordSequence ?? 0))
        }
        try queue.mark(.samples, requestId: lease.requestId, verdicts: acknowledged.map { ($0.record.uid, .uploaded) })
        try queue.fail(.samples, requestId: lease.requestId)

        let both = [HealthCharacteristic.glucose, Self.context]
        #expect(try fixture.store.recordAcknowledgements(peripheralUid: fixture.peripheralUid, characteristics: both, epoch: 0, through: 5)
            == [1: true, 2: false, 3: false, 4: true, 5: false])
        // Without the context's characteristic, 2 would look acknowledged: the lane asks with its companions.
        #expect(try fixture.store.recordAcknowledgements(
            peripheralUid: fixture.peripheralUid, characteristics: [HealthCharacteristic.glucose], epoch: 0, through: 5)[2] == true)
        #expect(try fixture.store.recordAcknowledgements(peripheralUid: fixture.peripheralUid, characteristics: both, epoch: 0, through: 3)
            == [1: true, 2: false, 3: false])
        #expect(try fixture.store.recordAcknowledgements(peripheralUid: fixture.peripheralUid, characteristics: both, epoch: 1, through: 5)
            == [1: true])
        #expect(try fixture.store.recordAcknowledgements(peripheralUid: "nobody", characteristics: both, epoch: 0, through: 5).isEmpty)
    }
}
