/// A small, fast, seedable random number generator (SplitMix64, Steele et al. 2014).
///
/// Randomness is passed into Tether's cores as a generator so that tests, fixture generation and simulations are
/// reproducible from a seed; production code passes `SystemRandomNumberGenerator`.
public struct SplitMix64: RandomNumberGenerator, Hashable, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension RandomNumberGenerator {
    /// True with probability `p` (never for `p <= 0`).
    public mutating func chance(_ p: Double) -> Bool {
        p > 0 && Double.random(in: 0..<1, using: &self) < p
    }
}
