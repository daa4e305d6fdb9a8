/// A decimal number kept exactly: `significand × 10^exponent`.
///
/// Measured values arrive as decimal mantissa and exponent (IEEE 11073-20601 SFLOAT/FLOAT) or as integers with a
/// decimal resolution (0.005 kg, 0.1 %), so a decimal type holds them without the binary rounding that turns
/// 120.5 into 120.49999. The exponent is kept as reported: 120.0 and 120 are different reports of the same number
/// (the device's precision), and `==` compares them as numbers (`isNumericallyEqual`), `Hashable` by digits.
public struct ExactDecimal: Hashable, Sendable, CustomStringConvertible, Encodable {
    public var significand: Int64
    public var exponent: Int

    public init(significand: Int64, exponent: Int) {
        self.significand = significand
        self.exponent = exponent
    }

    public init(_ integer: Int64) { self.init(significand: integer, exponent: 0) }

    /// Exact product, or nil if the significand would not fit in 64 bits.
    public func multiplied(by other: ExactDecimal) -> ExactDecimal? {
        let (product, overflow) = significand.multipliedReportingOverflow(by: other.significand)
        guard !overflow else { return nil }
        return ExactDecimal(significand: product, exponent: exponent + other.exponent).trimmed()
    }

    /// Exact sum, or nil on overflow.
    public func adding(_ other: ExactDecimal) -> ExactDecimal? {
        let common = min(exponent, other.exponent)
        guard let left = significand.scaled(byPowerOfTen: exponent - common),
              let right = other.significand.scaled(byPowerOfTen: other.exponent - common)
        else { return nil }
        let (sum, overflow) = left.addingReportingOverflow(right)
        return overflow ? nil : ExactDecimal(significand: sum, exponent: common)
    }

    /// `self / divisor` rounded half to even at `fractionDigits` decimal places: the one inexact operation, used for
    /// conversions whose factor has no finite decimal inverse (kPa to mm[Hg], °F to °C). Nil on overflow.
    public func divided(by divisor: ExactDecimal, fractionDigits: Int) -> ExactDecimal? {
        guard divisor.significand != 0 else { return nil }
        // self / divisor = (s1 / s2) × 10^(e1 - e2); the result r × 10^-f needs r = s1 × 10^(e1 - e2 + f) / s2.
        let shift = exponent - divisor.exponent + fractionDigits
        var numerator = significand
        var denominator = divisor.significand
        if shift >= 0 {
            guard let scaled = numerator.scaled(byPowerOfTen: shift) else { return nil }
            numerator = scaled
        } else {
            guard let scaled = denominator.scaled(byPowerOfTen: -shift) else { return nil }
            denominator = scaled
        }
        if denominator < 0 { (numerator, denominator) = (-numerator, -denominator) }
        var quotient = numerator / denominator
        let remainder = numerator % denominator
        let twice = remainder.magnitude * 2
        if twice > denominator.magnitude || (twice == denominator.magnitude && quotient % 2 != 0) {
            quotient += numerator < 0 ? -1 : 1
        }
        return ExactDecimal(significand: quotient, exponent: -fractionDigits)
    }

    /// The same number in its shortest form with a non-positive exponent: trailing zeros of a fraction dropped
    /// (0.50 → 0.5), a positive exponent multiplied out (3e6 → 3000000) when it fits. Results of arithmetic are
    /// trimmed; values as reported are not (their digits are the device's precision).
    public func trimmed() -> ExactDecimal {
        var result = self
        while result.significand != 0, result.significand % 10 == 0, result.exponent < 0 {
            result.significand /= 10
            result.exponent += 1
        }
        if result.exponent > 0, let whole = result.significand.scaled(byPowerOfTen: result.exponent) {
            result = ExactDecimal(significand: whole, exponent: 0)
        }
        if result.significand == 0 { result.exponent = min(result.exponent, 0) }
        return result
    }

    public func isNumericallyEqual(to other: ExactDecimal) -> Bool {
        guard let difference = adding(ExactDecimal(significand: -other.significand, exponent: other.exponent)) else {
            return false
        }
        return difference.significand == 0
    }

    /// Digits after the decimal point as written (0 for a non-negative exponent).
    public var fractionDigits: Int { max(0, -exponent) }

    /// For display only: a Double is not the value, it is a picture of it.
    public var doubleValue: Double {
        var value = Double(significand)
        if exponent >= 0 {
            for _ in 0..<exponent { value *= 10 }
        } else {
            var divisor = 1.0
            for _ in 0..<(-exponent) { divisor *= 10 }
            value /= divisor
        }
        return value
    }

    /// The exact decimal text: `120.5`, `-0.05`, `2000`, never an exponent form or a binary rounding.
    public var description: String {
        let negative = significand < 0
        var digits = String(significand.magnitude)
        if exponent >= 0 {
            if significand != 0 { digits += String(repeating: "0", count: exponent) }
        } else {
            let fraction = -exponent
            if digits.count <= fraction { digits = String(repeating: "0", count: fraction - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -fraction))
        }
        return negative ? "-" + digits : digits
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension Int64 {
    /// `self × 10^power`, or nil on overflow (power ≥ 0).
    func scaled(byPowerOfTen power: Int) -> Int64? {
        var value = self
        for _ in 0..<Swift.max(0, power) {
            let (next, overflow) = value.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            value = next
        }
        return value
    }
}
