/// IEEE 11073-20601 SFLOAT-Type (16 bits) and FLOAT-Type (32 bits) as a device writes them.
///
/// IEEE 11073-20601 Annex F.8 (and the GATT Specification Supplement "medfloat16"/"medfloat32"): a value is
/// `mantissa × 10^exponent`, the exponent a signed 4-bit (SFLOAT) or 8-bit (FLOAT) integer in the high bits and
/// the mantissa a signed 12-bit or 24-bit integer in the low bits. Five mantissa values are reserved for the special
/// values below, with exponent 0. The simulator's encoders are written from that text alone (never from the
/// gateway's HealthProfiles), so that one misreading cannot hide in both.
public enum MedicalFloatSpecial: String, CaseIterable, Hashable, Sendable, Codable {
    /// Not a Number: "measurement failed" (a cuff that could not take a reading).
    case nan
    /// Not at this Resolution: the value does not fit the resolution.
    case nres
    case positiveInfinity
    case negativeInfinity
    /// Reserved for future use (a receiver must not treat it as a number).
    case reserved
}

/// A 16-bit SFLOAT: 4-bit exponent, 12-bit mantissa (Annex F.8).
public struct SFloat: Hashable, Sendable {
    public let bits: UInt16

    /// Annex F.8 Table F.1 (SFLOAT): NaN 0x07FF, NRes 0x0800, +INF 0x07FE, -INF 0x0802, reserved 0x0801.
    public init(_ special: MedicalFloatSpecial) {
        switch special {
        case .nan: bits = 0x07FF
        case .nres: bits = 0x0800
        case .positiveInfinity: bits = 0x07FE
        case .negativeInfinity: bits = 0x0802
        case .reserved: bits = 0x0801
        }
    }

    /// `mantissa × 10^exponent`; nil when the mantissa is outside −2046...2045 (the 12-bit range minus the five
    /// reserved codes, −2048...−2047 and 2046...2047) or the exponent outside −8...7.
    public init?(mantissa: Int, exponent: Int) {
        guard (-2046...2045).contains(mantissa), (-8...7).contains(exponent) else { return nil }
        bits = UInt16(UInt8(bitPattern: Int8(exponent)) & 0x0F) << 12 | UInt16(UInt16(bitPattern: Int16(mantissa)) & 0x0FFF)
    }

    public init(bits: UInt16) { self.bits = bits }

    /// Little-endian, as every GATT characteristic carries it.
    public var bytes: [UInt8] { [UInt8(bits & 0xFF), UInt8(bits >> 8)] }
}

/// A 32-bit FLOAT: 8-bit exponent, 24-bit mantissa (Annex F.8).
public struct MedicalFloat32: Hashable, Sendable {
    public let bits: UInt32

    /// Annex F.8 (FLOAT): NaN 0x007FFFFF, NRes 0x00800000, +INF 0x007FFFFE, -INF 0x00800002, reserved 0x00800001.
    public init(_ special: MedicalFloatSpecial) {
        switch special {
        case .nan: bits = 0x007F_FFFF
        case .nres: bits = 0x0080_0000
        case .positiveInfinity: bits = 0x007F_FFFE
        case .negativeInfinity: bits = 0x0080_0002
        case .reserved: bits = 0x0080_0001
        }
    }

    /// `mantissa × 10^exponent`; nil outside mantissa −8388606...8388605 or exponent −128...127.
    public init?(mantissa: Int, exponent: Int) {
        guard (-8_388_606...8_388_605).contains(mantissa), (-128...127).contains(exponent) else { return nil }
        bits = UInt32(UInt8(bitPattern: Int8(exponent))) << 24 | (UInt32(bitPattern: Int32(mantissa)) & 0x00FF_FFFF)
    }

    public init(bits: UInt32) { self.bits = bits }

    public var bytes: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) } }
}
