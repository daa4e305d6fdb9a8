/// One stored record: its sequence number, the key RACP filters on, and the values a report sends for it (a
/// Glucose Measurement and its Context, one PLX spot-check, one CGM record), in order.
public struct StoredRecord: Hashable, Sendable {
    public let sequenceNumber: UInt16
    /// The sequence number, or for CGM the time offset in minutes.
    public let key: UInt16
    public let transmissions: [HealthTransmission]

    public init(sequenceNumber: UInt16, key: UInt16, transmissions: [HealthTransmission]) {
        self.sequenceNumber = sequenceNumber
        self.key = key
        self.transmissions = transmissions
    }
}

/// The device's record memory: oldest first, sequence numbers uint16 counting up and wrapping (GLS v1.0.1:
/// "The Sequence Number ... shall be incremented by 1 for each new measurement", uint16 and so modulo 65536).
/// Bounded like a real meter's flash: the oldest record goes when it is full.
public struct RecordStore: Hashable, Sendable {
    public private(set) var records: [StoredRecord] = []
    public private(set) var nextSequenceNumber: UInt16
    public let capacity: Int

    public init(firstSequenceNumber: UInt16 = 1, capacity: Int = 65_535) {
        nextSequenceNumber = firstSequenceNumber
        self.capacity = max(capacity, 1)
    }

    /// Stores a record made for the next sequence number; returns it.
    @discardableResult
    public mutating func append(_ make: (UInt16) -> StoredRecord) -> StoredRecord {
        let record = make(nextSequenceNumber)
        nextSequenceNumber &+= 1
        records.append(record)
        if records.count > capacity { records.removeFirst(records.count - capacity) }
        return record
    }

    /// The records a selection names, oldest first (by key: GLS filters on the value of the field, not on
    /// storage order; first/last are the oldest/newest stored).
    public func select(_ selection: RACPSelection) -> [StoredRecord] {
        switch selection {
        case .all: records
        case .atMost(let key): records.filter { $0.key <= key }
        case .atLeast(let key): records.filter { $0.key >= key }
        case .range(let low, let high): records.filter { (low...high).contains($0.key) }
        case .first: records.first.map { [$0] } ?? []
        case .last: records.last.map { [$0] } ?? []
        }
    }

    public mutating func delete(_ selection: RACPSelection) -> Int {
        let doomed = Set(select(selection).map(\.sequenceNumber))
        let before = records.count
        records.removeAll { doomed.contains($0.sequenceNumber) }
        return before - records.count
    }

    /// Memory cleared or the meter replaced: no records, and numbering starts again at `firstSequenceNumber`.
    public mutating func reset(firstSequenceNumber: UInt16) {
        records.removeAll()
        nextSequenceNumber = firstSequenceNumber
    }
}
