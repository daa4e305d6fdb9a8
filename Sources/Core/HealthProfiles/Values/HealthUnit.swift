/// A unit as a device reports it, spelled in UCUM (the Unified Code for Units of Measure, as HL7 FHIR and the PHD
/// implementation guide use), and the canonical unit the store keeps for each dimension.
///
/// Canonical units: pressure mm[Hg] (what clinicians and FHIR's vital-signs profile use), temperature Cel, mass kg,
/// length m, mass concentration of glucose mg/dL, substance concentration mmol/L, and the unit itself otherwise.
/// Mass and substance concentration of glucose are different dimensions: converting between them needs a molar mass,
/// which a parser has no business choosing, so each keeps its own canonical unit.
public enum HealthUnit: String, Hashable, Sendable, Encodable, CaseIterable {
    case millimetreOfMercury = "mm[Hg]"
    case kilopascal = "kPa"
    case celsius = "Cel"
    case fahrenheit = "[degF]"
    case kilogram = "kg"
    case gram = "g"
    case milligram = "mg"
    case pound = "[lb_av]"
    case metre = "m"
    case inch = "[in_i]"
    case kilogramPerLitre = "kg/L"
    case molePerLitre = "mol/L"
    case milligramPerDecilitre = "mg/dL"
    case millimolePerLitre = "mmol/L"
    case litre = "L"
    case millilitre = "mL"
    case percent = "%"
    case perMinute = "/min"
    case second = "s"
    case kilojoule = "kJ"
    case kilogramPerSquareMetre = "kg/m2"
    case ohm = "Ohm"
    case milligramPerDecilitrePerMinute = "mg/dL/min"

    /// The UCUM code (the raw value).
    public var ucum: String { rawValue }

    /// The unit the store keeps values of this unit's dimension in.
    public var canonical: HealthUnit {
        switch self {
        case .millimetreOfMercury, .kilopascal: .millimetreOfMercury
        case .celsius, .fahrenheit: .celsius
        case .kilogram, .pound: .kilogram
        case .metre, .inch: .metre
        case .kilogramPerLitre, .milligramPerDecilitre: .milligramPerDecilitre
        case .molePerLitre, .millimolePerLitre: .millimolePerLitre
        case .gram: .gram
        case .milligram: .milligram
        case .litre, .millilitre: .millilitre
        case .percent, .perMinute, .second, .kilojoule, .kilogramPerSquareMetre, .ohm, .milligramPerDecilitrePerMinute: self
        }
    }

    /// Digits added after the reported ones when a conversion has to round (kPa → mm[Hg], °F → Cel).
    public static let roundedConversionExtraDigits = 2

    /// `value` (in this unit) in the canonical unit.
    ///
    /// Exact (a finite decimal factor): lb → kg ×0.45359237 (the international avoirdupois pound, defined exactly,
    /// 1959); in → m ×0.0254 (defined exactly); kg/L → mg/dL ×10^5 and mol/L → mmol/L ×10^3 and L → mL ×10^3 (SI
    /// prefixes). Rounded (the inverse of the factor has no finite decimal form), half to even at the reported
    /// fraction digits + `roundedConversionExtraDigits`: kPa → mm[Hg] ÷0.133322387415 (1 mmHg = 133.322387415 Pa, a
    /// conventional value fixed by definition: 13.5951 g/cm³ × 9.80665 m/s² × 1 mm) and °F → Cel ((F − 32) × 5/9).
    public func canonicalValue(_ value: ExactDecimal) -> CanonicalValue? {
        let digits = value.fractionDigits + Self.roundedConversionExtraDigits
        switch self {
        case .pound: return value.multiplied(by: ExactDecimal(significand: 45_359_237, exponent: -8)).map { .exact($0) }
        case .inch: return value.multiplied(by: ExactDecimal(significand: 254, exponent: -4)).map { .exact($0) }
        case .kilogramPerLitre: return value.multiplied(by: ExactDecimal(significand: 1, exponent: 5)).map { .exact($0) }
        case .molePerLitre, .litre: return value.multiplied(by: ExactDecimal(significand: 1, exponent: 3)).map { .exact($0) }
        case .kilopascal:
            return value.divided(by: ExactDecimal(significand: 133_322_387_415, exponent: -12), fractionDigits: digits)
                .map { .rounded($0) }
        case .fahrenheit:
            guard let above = value.adding(ExactDecimal(-32)), let times5 = above.multiplied(by: ExactDecimal(5)) else { return nil }
            return times5.divided(by: ExactDecimal(9), fractionDigits: digits).map { .rounded($0) }
        default:
            return .exact(value)
        }
    }
}

/// A value in its canonical unit, and whether the conversion was exact.
public struct CanonicalValue: Hashable, Sendable, Encodable {
    public var value: ExactDecimal
    public var isExact: Bool

    public static func exact(_ value: ExactDecimal) -> CanonicalValue { CanonicalValue(value: value, isExact: true) }
    public static func rounded(_ value: ExactDecimal) -> CanonicalValue { CanonicalValue(value: value, isExact: false) }
}
