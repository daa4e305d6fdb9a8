import LinkProtocol

/// What can go wrong with ATT values in one direction, each a probability per value (or per step for re-chunking).
public struct ChannelFaults: Hashable, Sendable {
    /// The value never arrives.
    public var drop = 0.0
    /// The value arrives twice.
    public var duplicate = 0.0
    /// One bit of the value is flipped.
    public var corrupt = 0.0
    /// The value loses a random tail.
    public var truncate = 0.0
    /// The values of one step are joined and cut again at random points (splits and merges, §3.1).
    public var rechunk = 0.0

    public init(drop: Double = 0, duplicate: Double = 0, corrupt: Double = 0, truncate: Double = 0, rechunk: Double = 0) {
        self.drop = drop
        self.duplicate = duplicate
        self.corrupt = corrupt
        self.truncate = truncate
        self.rechunk = rechunk
    }

    public static let none = ChannelFaults()

    public var isNone: Bool { self == .none }

    /// Applies the faults to the values of one step, drawing from `random`.
    public func apply(to values: [[UInt8]], valueSize: Int, using random: inout some RandomNumberGenerator) -> [[UInt8]] {
        guard !isNone, !values.isEmpty else { return values }
        var values = values
        if rechunk > 0, Double.random(in: 0..<1, using: &random) < rechunk {
            let stream = values.flatMap { $0 }
            values = []
            var start = 0
            while start < stream.count {
                let size = Int.random(in: 1...valueSize, using: &random)
                values.append(Array(stream[start..<min(start + size, stream.count)]))
                start += size
            }
        }
        var result: [[UInt8]] = []
        for var value in values {
            if Double.random(in: 0..<1, using: &random) < drop { continue }
            if corrupt > 0, Double.random(in: 0..<1, using: &random) < corrupt, !value.isEmpty {
                let index = Int.random(in: value.indices, using: &random)
                value[index] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            }
            if truncate > 0, Double.random(in: 0..<1, using: &random) < truncate, value.count > 1 {
                value.removeLast(Int.random(in: 1..<value.count, using: &random))
            }
            result.append(value)
            if Double.random(in: 0..<1, using: &random) < duplicate { result.append(value) }
        }
        return result
    }
}
