/// What the gateway remembers of one device between connections (§8.8, §8.9, §9.8): which events it has stored,
/// and the highest event sequence and tick seen per boot, to widen the wrapping wire fields.
///
/// It is explicit state, so the store persists it with the events and a restarted gateway rebuilds it. It is a
/// cache, not the authority: the store's UNIQUE(device, boot, sequence) is. Forgetting an entry costs a redundant
/// store attempt, never an event, so the bounded set below may drop its oldest entries.
public struct DeviceHistory: Hashable, Sendable, Codable {
    public var serial: String?
    public var latestBoot: UInt16?
    public var boots: [UInt16: BootHistory] = [:]

    public init(serial: String? = nil) { self.serial = serial }

    public struct BootHistory: Hashable, Sendable, Codable {
        /// Every event sequence `0 ... storedThrough` is stored (−1: none yet).
        public var storedThrough: Int64 = -1
        /// Stored sequences above `storedThrough + 1` (out of order arrivals).
        public var storedAbove: Set<Int64> = []
        /// The highest widened event sequence seen, the reference for §8.9.
        public var highestSequence: Int64 = 0
        /// The highest widened tick seen, the reference for §9.8.
        public var highestTicks: Int64 = 0

        public init() {}

        /// Bound on `storedAbove`: far more than a device's event store, so it only trims after a long gap.
        public static let storedAboveLimit = 4096

        public func isStored(_ sequence: Int64) -> Bool {
            sequence <= storedThrough || storedAbove.contains(sequence)
        }

        public mutating func markStored(_ sequence: Int64) {
            guard sequence > storedThrough else { return }
            storedAbove.insert(sequence)
            while storedAbove.remove(storedThrough + 1) != nil { storedThrough += 1 }
            if storedAbove.count > Self.storedAboveLimit, let lowest = storedAbove.min() {
                storedAbove.remove(lowest)
            }
        }
    }

    /// §8.9: the 64-bit event sequence for a wire value of `bits` bits.
    public mutating func widenSequence(_ wire: UInt32, bits: Int, boot: UInt16) -> Int64 {
        var history = boots[boot, default: BootHistory()]
        let widened = bits >= 32 ? Int64(wire) : SerialUnwrap.unwrap(UInt64(wire), bits: bits, nearest: history.highestSequence)
        history.highestSequence = max(history.highestSequence, widened)
        boots[boot] = history
        return widened
    }

    /// §9.8: the 64-bit tick count for a 32-bit wire value.
    public mutating func widenTicks(_ wire: UInt32, boot: UInt16) -> Int64 {
        var history = boots[boot, default: BootHistory()]
        let widened = SerialUnwrap.unwrap(UInt64(wire), bits: 32, nearest: history.highestTicks)
        history.highestTicks = max(history.highestTicks, widened)
        boots[boot] = history
        return widened
    }

    public func isStored(_ key: EventKey) -> Bool { boots[key.bootCounter]?.isStored(key.sequence) ?? false }

    public mutating func markStored(_ key: EventKey) {
        boots[key.bootCounter, default: BootHistory()].markStored(key.sequence)
    }
}

/// The identity of an event (§8.8).
public struct EventKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public var serial: String
    public var bootCounter: UInt16
    public var sequence: Int64

    public init(serial: String, bootCounter: UInt16, sequence: Int64) {
        self.serial = serial
        self.bootCounter = bootCounter
        self.sequence = sequence
    }

    public var description: String { "\(serial)/\(bootCounter)/\(sequence)" }
}
