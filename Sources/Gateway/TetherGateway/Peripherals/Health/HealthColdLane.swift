import HealthProfiles
import TetherPrimitives
import TetherStore

/// The cold lane's store side (issue 14, "Three lanes", cold): the committed cursor a connection starts from, and
/// each batch of records the RACP client committed turned into samples and written with the cursor move in ONE
/// `HealthStore` transaction through the shared group commit. Both or neither: the store refuses the whole batch
/// when the cursor would move back, and a crash between the two leaves neither (HealthCrashTests).
///
/// Samples carry the cursor's epoch and the record's key (Sequence Number, or CGM Time Offset) as their record
/// sequence, so their dedup key (`HealthDedupKey` rule 1) makes any second arrival of the same record one row.
///
/// The cursor table has no fence column (migration v6): a stream whose latest epoch is not its first is read back
/// with fence = the highest position of its earlier epochs, which is at least the fence the client set when the
/// epoch began (the old cursor). A larger fence only costs a probe per connection until the device's latest key
/// passes it (docs/design/health.md, "The cold lane").
public actor HealthColdLane: HealthRecordSink {
    public struct Counters: Sendable {
        public var batchesStored = 0
        public var samplesStored = 0
        public var duplicates = 0
        public var storeFailures = 0
        /// Samples tombstoned because their record vanished from the device (RecordTransfer rule 8).
        public var vanishedTombstones = 0
        /// How each procedure ended, with the connection it ran on (deletions included: `.finished(.deleted)`).
        public var procedures: [(link: UInt64, ending: RecordProcedureEnding)] = []
    }

    /// How far the gateway deleted each stream's records from its device (RecordTransfer rule 7), by address and
    /// stream: the latest epoch's deletion. Kept for the process: after a restart the first deletion may be asked
    /// again once, which the device answers Success or No Records Found, deleting nothing more (GSS §3.178.2).
    private var deleted: [String: RecordDeletionPermit] = [:]
    /// Keys found gone from each stream's device (RecordTransfer rule 8), by address and stream, for the latest epoch
    /// audited: left out of later audits in this process. The store keeps those that took a tombstone.
    private var vanished: [String: (epoch: UInt32, keys: Set<UInt16>)] = [:]

    private let store: HealthStore
    private let committer: GroupCommitter
    private let peripherals: PeripheralRegistry
    public private(set) var counters = Counters()
    /// The last store failure, for status and tests.
    public private(set) var lastFailure: String?

    public init(database: GatewayDatabase, committer: GroupCommitter, faults: HealthStoreFaults = HealthStoreFaults()) {
        store = HealthStore(database: database, faults: faults)
        self.committer = committer
        peripherals = PeripheralRegistry(database: database)
    }

    public func committedCursor(of context: HealthRecordStreamContext) async -> RecordCursor? {
        guard let uid = peripheralUid(context.address),
            let epochs = try? store.epochs(peripheralUid: uid, stream: context.stream)
        else { return nil }
        guard let latest = epochs.last else { return .start }
        guard latest.kind == context.cursorKind, let epoch = UInt32(exactly: latest.epoch) else { return nil }
        let earlier = epochs.dropLast().compactMap(\.position).max()
        return RecordCursor(
            epoch: epoch, last: latest.position.map { UInt16(clamping: $0) },
            fence: latest.epoch > 0 ? earlier.map { UInt16(clamping: $0) } : nil)
    }

    public func store(_ batch: RecordTransfer<HealthCharacteristicValue>.StoreBatch, of context: HealthRecordStreamContext) async -> Bool {
        guard let uid = peripheralUid(context.address) else {
            return failed("no peripheral registry row for \(context.address)")
        }
        let epoch = batch.cursor?.epoch ?? batch.epoch
        let samples = batch.records.flatMap { Self.samples(of: $0, epoch: epoch, context: context) }
        let move = batch.cursor.map { cursor in
            HealthCursorMove(
                stream: context.stream, kind: context.cursorKind, epoch: Int64(cursor.epoch), position: cursor.last.map(Int64.init),
                epochReason: cursor.epoch == 0 ? nil : context.keys == .sequenceNumber ? .sequenceReset : .sessionRestarted)
        }
        switch await store.commit(HealthIngestBatch(peripheralUid: uid, samples: samples, cursor: move), via: committer) {
        case .success(let outcome):
            counters.batchesStored += 1
            counters.samplesStored += outcome.storedCount
            counters.duplicates += outcome.duplicateCount
            return true
        case .failure(let error):
            return failed("\(error)")
        }
    }

    public func procedureEnded(_ ending: RecordProcedureEnding, of context: HealthRecordStreamContext) async {
        counters.procedures.append((context.link, ending))
        // The readings stay valid: a record the device deleted was acknowledged by the backend, so the gateway
        // keeps its samples and writes no tombstone (docs/design/health.md, "Deleting acknowledged records").
        if case .finished(.deleted(let through, let cursor)) = ending {
            let key = Self.deletionKey(context)
            if let earlier = deleted[key], earlier.epoch > cursor.epoch
                || (earlier.epoch == cursor.epoch && earlier.acknowledgedThrough >= through)
            {
                return
            }
            deleted[key] = RecordDeletionPermit(epoch: cursor.epoch, acknowledgedThrough: through)
        }
    }

    public func acknowledgements(of context: HealthRecordStreamContext, epoch: UInt32, through: UInt16) async -> RecordAcknowledgements? {
        guard let uid = peripheralUid(context.address) else { return nil }
        guard let stored = try? store.recordAcknowledgements(
            peripheralUid: uid, characteristics: Self.characteristics(context), epoch: Int64(epoch), through: Int64(through))
        else { return nil }
        var keys: [UInt16: Bool] = [:]
        for (key, acknowledged) in stored {
            guard let key = UInt16(exactly: key) else { return nil }  // a record key is a uint16: anything else is not ours
            keys[key] = acknowledged
        }
        let done = deleted[Self.deletionKey(context)].flatMap { $0.epoch == epoch ? $0.acknowledgedThrough : nil }
        return RecordAcknowledgements(epoch: epoch, keys: keys, deletedThrough: done)
    }

    /// Every key from the lowest the epoch stored a sample under up to `through`: the transfer committed each of
    /// them (a sequence-numbered transfer moves the cursor only through a consecutive run), with a sample or not (a
    /// meter's error record carries no value and stores none), except numbers it passed as absent, which the search
    /// finds gone and which take no sample with them. Less the keys already found gone: in the store (vanished and
    /// nothing left there) and in this process's memory (found gone with nothing to tombstone, as those).
    public func expectedRecordKeys(of context: HealthRecordStreamContext, epoch: UInt32, through: UInt16) async -> [UInt16]? {
        guard let uid = peripheralUid(context.address),
            let facts = try? store.recordKeyFacts(
                peripheralUid: uid, characteristics: Self.characteristics(context), epoch: Int64(epoch), through: Int64(through))
        else { return nil }
        guard let lowest = facts.lowest else { return [] }
        guard let low = UInt16(exactly: lowest) else { return nil }  // a record key is a uint16: anything else is not ours
        guard low <= through else { return [] }
        let remembered = vanished[Self.deletionKey(context)].flatMap { $0.epoch == epoch ? $0.keys : nil } ?? []
        return (low...through).filter { !facts.gone.contains(Int64($0)) && !remembered.contains($0) }
    }

    public func recordsVanished(_ keys: [UInt16], epoch: UInt32, of context: HealthRecordStreamContext) async -> Int? {
        guard let uid = peripheralUid(context.address),
            let samples = try? store.undeletedSampleUids(
                peripheralUid: uid, characteristics: Self.characteristics(context), epoch: Int64(epoch), recordKeys: keys.map(Int64.init))
        else { return nil }
        var tombstoned = 0
        for sample in samples {
            switch await store.commit(.vanishedFromDevice(sampleUid: sample), via: committer) {
            case .success: tombstoned += 1
            case .failure(.sampleAlreadyDeleted): break  // a technician's deletion came first: it stands
            case .failure(let error):
                lastFailure = "\(error)"
                return nil
            }
        }
        counters.vanishedTombstones += tombstoned
        // Found gone, tombstoned or with nothing to tombstone: not looked for again in this process.
        let stream = Self.deletionKey(context)
        var known = vanished[stream].flatMap { $0.epoch == epoch ? $0.keys : nil } ?? []
        known.formUnion(keys)
        vanished[stream] = (epoch, known)
        return tombstoned
    }

    public func isStoredRecord(
        _ value: HealthCharacteristicValue, key: UInt16, epoch: UInt32, of context: HealthRecordStreamContext
    ) async -> Bool? {
        guard let uid = peripheralUid(context.address),
            let stored = try? store.recordBytes(
                peripheralUid: uid, characteristic: context.characteristic.uuid, epoch: Int64(epoch), recordKey: Int64(key))
        else { return nil }
        // Nothing stored under the key: a record the gateway took without a sample (a meter's error record with no
        // concentration) or a number the transfer passed as absent. Neither says which reading the device holds
        // there: undecided (the client waits for a later connection), never "another record" (a new epoch would
        // store every reading again).
        guard !stored.isEmpty else { return nil }
        return stored.contains(value.bytes)
    }

    /// The record characteristic and its companions': every sample a record key names.
    private static func characteristics(_ context: HealthRecordStreamContext) -> [String] {
        [context.characteristic.uuid] + (context.service.keyedRecords?.companions.map(\.uuid) ?? [])
    }

    private static func deletionKey(_ context: HealthRecordStreamContext) -> String {
        "\(context.address.uppercased()) \(context.stream.characteristic) \(context.stream.userIndex.map(String.init) ?? "-")"
    }

    private func failed(_ reason: String) -> Bool {
        counters.storeFailures += 1
        lastFailure = reason
        return false
    }

    private func peripheralUid(_ address: String) -> String? {
        (try? peripherals.peripheral(identityAddress: address))??.uid
    }

    /// One record's samples (unless already stored) and its companions', in the record's epoch with its key as
    /// their record sequence. A CGM value may hold several records: only this key's observations are taken. A
    /// companion (Glucose Measurement Context) has no time of its own and takes its measurement's (GLS §3.107).
    static func samples(
        of record: RecordTransfer<HealthCharacteristicValue>.RecordValues, epoch: UInt32, context: HealthRecordStreamContext
    ) -> [HealthSample] {
        let measured = (try? HealthDecoder.decode(characteristic: context.characteristic, bytes: record.record.bytes))?
            .observations.filter { observation in
                if case .minutesSinceSessionStart(let minutes) = observation.time, context.keys == .timeOffset {
                    return minutes == record.key
                }
                return true
            } ?? []
        var samples: [HealthSample] = []
        if !record.recordAlreadyStored {
            samples += HealthHotLane.samples(
                of: measured.filter { !$0.isIntermediate }, from: record.record, characteristic: context.characteristic,
                clock: context.clock, lane: .cold)
        }
        let time = measured.first?.time ?? .notSupplied
        for companion in record.companions {
            guard let characteristic = HealthCharacteristic(rawValue: companion.characteristic),
                let observations = try? HealthDecoder.decode(characteristic: characteristic, bytes: companion.bytes).observations
            else { continue }
            let timed = observations.map { observation in
                var observation = observation
                observation.time = time
                return observation
            }
            samples += HealthHotLane.samples(
                of: timed, from: companion, characteristic: characteristic, clock: context.clock, lane: .cold)
        }
        return samples.map { sample in
            var sample = sample
            sample.epoch = Int64(epoch)
            sample.recordSequence = Int64(record.key)
            return sample
        }
    }
}
