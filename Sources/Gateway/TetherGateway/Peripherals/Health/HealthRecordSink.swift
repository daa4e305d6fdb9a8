import HealthProfiles
import TetherPrimitives
import TetherStore

/// One device's stream of stored records as the cold lane reads it on a connection: which characteristic carries
/// the records, how RACP keys them, and what the session learnt of the device's clock (for the readings' times).
public struct HealthRecordStreamContext: Hashable, Sendable {
    public var address: String
    public var link: UInt64
    public var service: HealthService
    /// The records' characteristic (Glucose Measurement 0x2A18, CGM Measurement 0x2AA7).
    public var characteristic: HealthCharacteristic
    public var keys: RecordKeyKind
    public var clock: DeviceClockFacts

    public init(
        address: String, link: UInt64, service: HealthService, characteristic: HealthCharacteristic, keys: RecordKeyKind,
        clock: DeviceClockFacts
    ) {
        self.address = address
        self.link = link
        self.service = service
        self.characteristic = characteristic
        self.keys = keys
        self.clock = clock
    }

    /// The store's name for the stream (one user: the simulated and most real meters are single-user).
    public var stream: HealthRecordStream { HealthRecordStream(characteristic: characteristic.uuid) }

    public var cursorKind: HealthCursorKind { keys == .sequenceNumber ? .sequence : .timeOffset }
}

/// Where the cold lane keeps what it takes over RACP: the committed cursor a connection starts from, and each batch
/// of records' samples with the cursor, in one transaction. A sink whose `records` is nil has no cold lane: its
/// devices' record characteristics go to the hot path as any other value.
public protocol HealthRecordSink: Sendable {
    /// The stream's committed cursor, or nil when it cannot be read (then the lane does not run on this link).
    func committedCursor(of context: HealthRecordStreamContext) async -> RecordCursor?
    /// Stores the batch's samples and, when it names one, the cursor, in ONE transaction; true once durable.
    func store(_ batch: RecordTransfer<HealthCharacteristicValue>.StoreBatch, of context: HealthRecordStreamContext) async -> Bool
    /// A procedure on the stream ended (or was abandoned after a failed store), a deletion included
    /// (`.finished(.deleted(...))`: the sink remembers how far, so that a later connection does not delete again).
    func procedureEnded(_ ending: RecordProcedureEnding, of context: HealthRecordStreamContext) async
    /// The facts of the deletion rule for one epoch of the stream (RecordTransfer rule 7, `RecordDeletionRule`):
    /// each key stored up to `through` with whether the backend acknowledged all its samples, and how far the
    /// gateway already deleted in that epoch. Nil when they cannot be read: then nothing is deleted.
    func acknowledgements(of context: HealthRecordStreamContext, epoch: UInt32, through: UInt16) async -> RecordAcknowledgements?
    /// The keys of `epoch` up to `through` the device should still hold (RecordTransfer rule 8): every key stored,
    /// except those already found vanished. Nil when they cannot be read: then nothing is looked for.
    func expectedRecordKeys(of context: HealthRecordStreamContext, epoch: UInt32, through: UInt16) async -> [UInt16]?
    /// Records keyed `keys` in `epoch` vanished from the device (RecordTransfer rule 8): tombstones every undeleted
    /// sample stored under them (`vanished-from-device`, each with its tombstone through the group commit). Returns
    /// how many, or nil when the store failed (then the next connection's audit finds them again).
    func recordsVanished(_ keys: [UInt16], epoch: UInt32, of context: HealthRecordStreamContext) async -> Int?
    /// Whether `value`, the device's latest record, is the record stored under `key` in `epoch` (the same bytes):
    /// RecordAccessClient rule 4 tells a device whose newest records were deleted from a renumbered one by it.
    /// Nil when the store could not be read, or holds nothing under the key (nothing to compare with).
    func isStoredRecord(_ value: HealthCharacteristicValue, key: UInt16, epoch: UInt32, of context: HealthRecordStreamContext) async -> Bool?
}

/// How a cold-lane procedure ended on a connection.
public enum RecordProcedureEnding: Hashable, Sendable {
    case finished(RecordAccessOutcome)
    /// A store failed: nothing more on that connection; the next resumes from `cursor`.
    case abandoned(cursor: RecordCursor)
}

extension HealthValueSink {
    public var records: (any HealthRecordSink)? { nil }
}
