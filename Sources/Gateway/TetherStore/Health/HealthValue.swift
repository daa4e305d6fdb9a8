/// A health value as the store keeps it, in plain terms: the store does not depend on `HealthProfiles`, whose
/// parsers produce these.
///
/// An exact decimal, `mantissa · 10^exponent`: IEEE-11073 SFLOAT and FLOAT are exactly this (IEEE 11073-20601
/// Annex F.8: a 12- or 24-bit mantissa and a 4- or 8-bit base-10 exponent), and so is every exact unit conversion
/// into a decimal unit. Never a binary floating-point number, which would turn 0.1 into something else.
public struct HealthDecimal: Hashable, Sendable, CustomStringConvertible {
    public var mantissa: Int64
    public var exponent: Int32

    public init(mantissa: Int64, exponent: Int32) {
        self.mantissa = mantissa
        self.exponent = exponent
    }

    /// Reads a plain decimal numeral (`120`, `-0.05`, `98.60`): digits with at most one point and an optional
    /// leading minus. `nil` for anything else (no exponent notation, no spaces, no `+`) or for more digits than
    /// an Int64 mantissa holds.
    public init?(_ text: String) {
        var digits = Substring(text)
        let negative = digits.first == "-"
        if negative { digits = digits.dropFirst() }
        guard let first = digits.first, first.isASCII, first.isNumber, let last = digits.last, last.isASCII, last.isNumber else { return nil }
        var mantissa: Int64 = 0
        var fractionDigits: Int32 = 0
        var seenPoint = false
        for character in digits {
            if character == "." {
                guard !seenPoint else { return nil }
                seenPoint = true
                continue
            }
            guard character.isASCII, let digit = character.wholeNumberValue else { return nil }
            let (times10, overflow1) = mantissa.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            mantissa = sum
            if seenPoint { fractionDigits += 1 }
        }
        self.init(mantissa: negative ? -mantissa : mantissa, exponent: -fractionDigits)
    }

    /// The exact value as a plain decimal numeral, with as many fraction digits as the exponent says
    /// (`HealthDecimal(mantissa: 1205, exponent: -1)` is `120.5`, `(120, 1)` is `1200`, `(5, -3)` is `0.005`).
    public var description: String {
        let magnitude = String(mantissa.magnitude)
        let sign = mantissa < 0 ? "-" : ""
        guard exponent < 0 else { return sign + magnitude + String(repeating: "0", count: mantissa == 0 ? 0 : Int(exponent)) }
        let fraction = Int(-exponent)
        let padded = magnitude.count > fraction ? magnitude : String(repeating: "0", count: fraction - magnitude.count + 1) + magnitude
        let split = padded.index(padded.endIndex, offsetBy: -fraction)
        return sign + padded[..<split] + "." + padded[split...]
    }
}

/// Whether a reported value is a number. IEEE 11073-20601 Annex F.8 reserves mantissas for NaN, NRes (not at this
/// resolution), ±INFINITY and one reserved value: each is kept as this status, never as a number (a cuff's
/// "measurement failed" is not 2047 mmHg).
public enum HealthValueStatus: String, Codable, Hashable, Sendable, CaseIterable {
    case number
    case nan
    case nres
    case positiveInfinity = "positive-infinity"
    case negativeInfinity = "negative-infinity"
    case reserved
}

/// One measured value: its status, and for a number the value as reported and converted exactly to its
/// canonical UCUM unit. Units are UCUM strings (`mm[Hg]`, `kPa`, `Cel`, `[degF]`, `kg`, `[lb_av]`, `mg/dL`,
/// `mmol/L`, `%`, `/min`), as reported and canonical even for a special value, so that a row always says what it
/// measures.
public struct HealthValue: Hashable, Sendable {
    public var status: HealthValueStatus
    /// Set exactly when `status` is `.number`.
    public var reported: HealthDecimal?
    public var reportedUnit: String
    /// Set exactly when `status` is `.number`.
    public var canonical: HealthDecimal?
    public var canonicalUnit: String

    public static func number(_ reported: HealthDecimal, unit reportedUnit: String, canonical: HealthDecimal, unit canonicalUnit: String) -> HealthValue {
        HealthValue(status: .number, reported: reported, reportedUnit: reportedUnit, canonical: canonical, canonicalUnit: canonicalUnit)
    }

    /// A value that is not a number; `status` must not be `.number` (the table refuses the row otherwise).
    public static func special(_ status: HealthValueStatus, reportedUnit: String, canonicalUnit: String) -> HealthValue {
        HealthValue(status: status, reported: nil, reportedUnit: reportedUnit, canonical: nil, canonicalUnit: canonicalUnit)
    }

    public init(status: HealthValueStatus, reported: HealthDecimal?, reportedUnit: String, canonical: HealthDecimal?, canonicalUnit: String) {
        self.status = status
        self.reported = reported
        self.reportedUnit = reportedUnit
        self.canonical = canonical
        self.canonicalUnit = canonicalUnit
    }
}
