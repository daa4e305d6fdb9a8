import GRDB
import LinkProtocol

/// A row of `consumptionEvent`: one HIT_EVENT, unique by (device, boot, sequence) (§8.8).
public struct ConsumptionEventRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "consumptionEvent"

    public var id: Int64?
    public var deviceId: Int64
    public var bootCounter: UInt16
    /// Widened event sequence (§8.9).
    public var sequence: Int64
    /// Widened device milliseconds since boot (§9.8): the raw time, kept forever so UTC can be derived again.
    public var ticks: Int64
    /// Derived wall-clock time and its uncertainty, both absent until the boot has an anchor (§9.7).
    public var utcNanoseconds: Int64?
    public var uncertaintyNanoseconds: Int64?
    public var durationMilliseconds: UInt16
    public var intensity: UInt8
    public var receivedAt: Int64
    /// When the backend acknowledged the latest command for this event; `nil` while anything is unsynced.
    public var syncedAt: Int64?

    public init(
        id: Int64? = nil, deviceId: Int64, bootCounter: UInt16, sequence: Int64, ticks: Int64, time: TimeEstimate?,
        durationMilliseconds: UInt16, intensity: UInt8, receivedAt: Int64, syncedAt: Int64? = nil
    ) {
        self.id = id
        self.deviceId = deviceId
        self.bootCounter = bootCounter
        self.sequence = sequence
        self.ticks = ticks
        self.utcNanoseconds = time?.utcNanoseconds
        self.uncertaintyNanoseconds = time?.uncertaintyNanoseconds
        self.durationMilliseconds = durationMilliseconds
        self.intensity = intensity
        self.receivedAt = receivedAt
        self.syncedAt = syncedAt
    }

    public var time: TimeEstimate? {
        guard let utcNanoseconds, let uncertaintyNanoseconds else { return nil }
        return TimeEstimate(utcNanoseconds: utcNanoseconds, uncertaintyNanoseconds: uncertaintyNanoseconds)
    }

    public enum Columns {
        public static let id = Column(CodingKeys.id)
        public static let deviceId = Column(CodingKeys.deviceId)
        public static let bootCounter = Column(CodingKeys.bootCounter)
        public static let sequence = Column(CodingKeys.sequence)
        public static let ticks = Column(CodingKeys.ticks)
        public static let utcNanoseconds = Column(CodingKeys.utcNanoseconds)
        public static let uncertaintyNanoseconds = Column(CodingKeys.uncertaintyNanoseconds)
        public static let durationMilliseconds = Column(CodingKeys.durationMilliseconds)
        public static let intensity = Column(CodingKeys.intensity)
        public static let receivedAt = Column(CodingKeys.receivedAt)
        public static let syncedAt = Column(CodingKeys.syncedAt)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
