/// An IEEE 11073-20601 SFLOAT (16 bits) or FLOAT (32 bits), as the Bluetooth health characteristics carry their
/// measured values (GATT Specification Supplement §2.2 "SFLOAT"/"FLOAT" data types, defined by IEEE 11073-20601
/// Annex F.8).
///
/// Both are `mantissa × 10^exponent`, two's complement: SFLOAT has a 4-bit exponent and a 12-bit mantissa, FLOAT an
/// 8-bit exponent and a 24-bit mantissa. Five codes at exponent 0 are not numbers (NaN, NRes, ±INFINITY and one
/// reserved code). They are kept as a `status`, never as a number: a cuff's "measurement failed" (NaN, 0x07FF) read
/// as a number is the 2047 mmHg that blood-pressure apps have stored (notes: blood-pressure-monitor-fl #80).
///
/// Only codes with exponent 0 are special: Annex F.8 defines each special value as one code (exponent 0 and the
/// mantissa 2^11−1, −2^11, ...), so 0x17FF is the number 20470, not NaN.
public struct MedicalFloat: Hashable, Sendable, CustomStringConvertible, Encodable {
    public enum Width: String, Hashable, Sendable, Encodable {
        case sfloat, float
    }

    public let width: Width
    /// The code as it arrived (16 bits for SFLOAT).
    public let raw: UInt32
    public let status: ValueStatus
    /// The two's-complement fields; for a special value they are the code's own fields (exponent 0).
    public let mantissa: Int32
    public let exponent: Int8

    /// Decodes a 16-bit SFLOAT (little-endian on the wire: the caller reads the UInt16).
    public static func sfloat(_ raw: UInt16) -> MedicalFloat {
        let mantissa = Int32(Int16(bitPattern: raw << 4) >> 4)  // sign-extend the low 12 bits
        let exponent = Int8(Int16(bitPattern: raw) >> 12)  // the top 4 bits, arithmetic shift keeps the sign
        let status: ValueStatus
        switch raw {
        case 0x07FF: status = .nan
        case 0x0800: status = .nres
        case 0x07FE: status = .positiveInfinity
        case 0x0802: status = .negativeInfinity
        case 0x0801: status = .reserved
        default: status = .number
        }
        return MedicalFloat(width: .sfloat, raw: UInt32(raw), status: status, mantissa: mantissa, exponent: exponent)
    }

    /// Decodes a 32-bit FLOAT.
    public static func float(_ raw: UInt32) -> MedicalFloat {
        let mantissa = Int32(bitPattern: raw << 8) >> 8  // sign-extend the low 24 bits
        let exponent = Int8(bitPattern: UInt8(truncatingIfNeeded: raw >> 24))
        let status: ValueStatus
        switch raw {
        case 0x007F_FFFF: status = .nan
        case 0x0080_0000: status = .nres
        case 0x007F_FFFE: status = .positiveInfinity
        case 0x0080_0002: status = .negativeInfinity
        case 0x0080_0001: status = .reserved
        default: status = .number
        }
        return MedicalFloat(width: .float, raw: raw, status: status, mantissa: mantissa, exponent: exponent)
    }

    /// The exact number, or nil when the code is a special value.
    public var decimal: ExactDecimal? {
        status == .number ? ExactDecimal(significand: Int64(mantissa), exponent: Int(exponent)) : nil
    }

    public var measured: MeasuredValue { MeasuredValue(status: status, decimal: decimal) }

    public var description: String { decimal?.description ?? status.rawValue }

    enum CodingKeys: String, CodingKey { case status, value, mantissa, exponent, raw }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(decimal, forKey: .value)
        try container.encode(mantissa, forKey: .mantissa)
        try container.encode(exponent, forKey: .exponent)
    }
}

/// Whether a measured value is a number and, if not, which of IEEE 11073-20601's special values it is. A value that
/// is not a number is still an observation (the device reported that it could not measure), never a number.
public enum ValueStatus: String, Hashable, Sendable, Encodable, CaseIterable {
    case number
    /// Not a Number: no valid value (for instance a failed cuff measurement). Also what the fixed-point fields use
    /// for "measurement unsuccessful" (0xFFFF weight, WSS §3.2.1.2).
    case nan
    /// Not at this Resolution: the value cannot be represented with the code's precision.
    case nres
    case positiveInfinity = "+inf"
    case negativeInfinity = "-inf"
    /// The reserved code (0x0801 / 0x00800001): reserved for future use, not a number.
    case reserved
}

/// A measured value as it will be stored: a status and, only when the status is `.number`, the exact number.
public struct MeasuredValue: Hashable, Sendable, CustomStringConvertible, Encodable {
    public var status: ValueStatus
    public var decimal: ExactDecimal?

    public init(status: ValueStatus, decimal: ExactDecimal?) {
        self.status = status
        self.decimal = status == .number ? decimal : nil
    }

    public static func number(_ decimal: ExactDecimal) -> MeasuredValue { MeasuredValue(status: .number, decimal: decimal) }

    /// A fixed-point field (`raw × resolution`): exact by construction.
    public static func fixedPoint(_ raw: Int64, resolution: ExactDecimal) -> MeasuredValue {
        .number(ExactDecimal(significand: raw * resolution.significand, exponent: resolution.exponent))
    }

    public var description: String { decimal?.description ?? status.rawValue }

    enum CodingKeys: String, CodingKey { case status, value }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(decimal, forKey: .value)
    }
}
