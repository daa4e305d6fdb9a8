import TetherPrimitives

/// Conversions between a `Timestamp` and whole seconds since the epoch, checked for overflow: a device's Date
/// Time reaches year 9999, a Timestamp (Int64 nanoseconds) only about 2262.
enum EpochArithmetic {
    /// Whole seconds since the epoch (rounded down) and the nanoseconds after them (0 ..< 10⁹).
    static func split(_ instant: Timestamp) -> (seconds: Int64, nanoseconds: Int64) {
        let (quotient, remainder) = instant.nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return remainder < 0 ? (quotient - 1, remainder + 1_000_000_000) : (quotient, remainder)
    }

    /// The instant `seconds` after the epoch plus `nanoseconds`, or nil outside a Timestamp's range.
    static func instant(seconds: Int64, nanoseconds extra: Int64 = 0) -> Timestamp? {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        let (sum, overflowSum) = product.addingReportingOverflow(extra)
        guard !overflowSum else { return nil }
        return Timestamp(nanoseconds: sum)
    }

    /// |duration| (Duration is not SignedNumeric, so `abs` does not apply).
    static func magnitude(_ duration: Duration) -> Duration { duration < .zero ? .zero - duration : duration }
}
