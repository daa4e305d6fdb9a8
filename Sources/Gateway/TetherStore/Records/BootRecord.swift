import Foundation
import GRDB

/// A row of `boot`: one boot segment of one device (§9.6). Events and anchors belong to a boot.
public struct BootRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "boot"

    public var id: Int64?
    public var deviceId: Int64
    public var bootCounter: UInt16
    public var firstSeenAt: Int64
    /// Retention deleted events of this boot up to this sequence (−1: none). The dedup authority for what is no
    /// longer in the table: a sequence at or below it was stored unless it lies in `prunedGaps` (§8.8).
    public var prunedThroughSequence: Int64
    /// Sequences at or below `prunedThroughSequence` that had not arrived when their neighbours were pruned.
    /// The device may still hold them; when one arrives it is stored like any new event.
    public var prunedGaps: [SequenceGap]

    public struct SequenceGap: Codable, Hashable, Sendable {
        public var from: Int64
        public var through: Int64

        public init(from: Int64, through: Int64) {
            self.from = from
            self.through = through
        }

        public func contains(_ sequence: Int64) -> Bool { from <= sequence && sequence <= through }

        // Stored as a two-element array: compact for long lists of gaps.
        public init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            from = try container.decode(Int64.self)
            through = try container.decode(Int64.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(from)
            try container.encode(through)
        }
    }

    public init(id: Int64? = nil, deviceId: Int64, bootCounter: UInt16, firstSeenAt: Int64, prunedThroughSequence: Int64 = -1, prunedGaps: [SequenceGap] = []) {
        self.id = id
        self.deviceId = deviceId
        self.bootCounter = bootCounter
        self.firstSeenAt = firstSeenAt
        self.prunedThroughSequence = prunedThroughSequence
        self.prunedGaps = prunedGaps
    }

    /// Whether an event of this boot with this sequence was stored and then pruned (so it is a duplicate although
    /// its row is gone).
    public func wasPruned(_ sequence: Int64) -> Bool {
        sequence <= prunedThroughSequence && !prunedGaps.contains { $0.contains(sequence) }
    }

    /// Read by hand: every group commit looks boots up, and `prunedGaps` is almost always `[]`, which needs no
    /// JSON decoder.
    public init(row: Row) throws {
        id = row[Columns.id]
        deviceId = row[Columns.deviceId]
        bootCounter = row[Columns.bootCounter]
        firstSeenAt = row[Columns.firstSeenAt]
        prunedThroughSequence = row[Columns.prunedThroughSequence]
        let gaps: String = row[Columns.prunedGaps]
        prunedGaps = gaps == "[]" ? [] : try JSONDecoder().decode([SequenceGap].self, from: Data(gaps.utf8))
    }

    public enum Columns {
        public static let id = Column(CodingKeys.id)
        public static let deviceId = Column(CodingKeys.deviceId)
        public static let bootCounter = Column(CodingKeys.bootCounter)
        public static let firstSeenAt = Column(CodingKeys.firstSeenAt)
        public static let prunedThroughSequence = Column(CodingKeys.prunedThroughSequence)
        public static let prunedGaps = Column(CodingKeys.prunedGaps)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
