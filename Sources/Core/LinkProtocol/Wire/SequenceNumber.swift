/// A 16-bit frame sequence number compared with serial-number arithmetic (§5.2, RFC 1982).
public struct SequenceNumber: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16

    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// The number after this one, wrapping from 65535 to 0 (§5.1).
    public var next: SequenceNumber { SequenceNumber(rawValue &+ 1) }

    /// The signed distance from `self` to `other`: positive when `other` comes later.
    /// §5.2: `a` precedes `b` when `(b − a) mod 2¹⁶` is in `1 … 2¹⁵−1`.
    public func distance(to other: SequenceNumber) -> Int {
        Int(Int16(bitPattern: other.rawValue &- rawValue))
    }

    public func advanced(by offset: Int) -> SequenceNumber {
        SequenceNumber(rawValue &+ UInt16(truncatingIfNeeded: offset))
    }

    public var description: String { String(rawValue) }
}

/// Widens a wrapping counter to 64 bits by choosing the value nearest to a reference (§8.9, §9.8).
public enum SerialUnwrap {
    /// The 64-bit value whose low `bits` bits equal `wrapped` and which is nearest to `reference`.
    public static func unwrap(_ wrapped: UInt64, bits: Int, nearest reference: Int64) -> Int64 {
        precondition(bits > 0 && bits < 63)
        let modulus = Int64(1) << bits
        let half = modulus / 2
        let base = reference - (reference & (modulus - 1))  // reference with its low bits cleared
        var candidate = base + Int64(wrapped & UInt64(modulus - 1))
        if candidate - reference > half { candidate -= modulus }
        if reference - candidate >= half { candidate += modulus }
        // Counters start at 0, so a value below zero is never the nearest real one.
        if candidate < 0 { candidate += modulus }
        return candidate
    }
}
