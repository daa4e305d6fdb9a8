/// IEEE 754 binary16 by hand, so that the codec does not depend on the platform's Float16 (absent on some targets).
/// RFC 8949 Appendix D gives the decoding in C; this is the same arithmetic.
enum HalfFloat {
    /// RFC 8949 Appendix D: exponent 0 is subnormal (mant × 2⁻²⁴), 31 is infinity or NaN, else (1024 + mant) × 2^(exp−25).
    static func double(fromBits bits: UInt16) -> Double {
        let exponent = Int((bits >> 10) & 0x1F)
        let mantissa = Double(bits & 0x3FF)
        let magnitude: Double
        switch exponent {
        case 0: magnitude = mantissa * 0x1p-24
        case 31:
            if bits & 0x3FF == 0 {
                magnitude = .infinity
            } else {
                // Keep the payload: widen the 10-bit mantissa into binary64's 52 bits.
                let sign: UInt64 = bits & 0x8000 != 0 ? 1 << 63 : 0
                return Double(bitPattern: sign | 0x7FF0_0000_0000_0000 | UInt64(bits & 0x3FF) << 42)
            }
        default: magnitude = (1024 + mantissa) * Double(sign: .plus, exponent: exponent - 25, significand: 1)
        }
        return bits & 0x8000 != 0 ? -magnitude : magnitude
    }

    /// The binary16 bits of `value` when binary16 holds it exactly (infinities and ±0 included, NaN excluded).
    static func exactBits(of value: Double) -> UInt16? {
        guard !value.isNaN else { return nil }
        let sign: UInt16 = value.sign == .minus ? 0x8000 : 0
        if value.isInfinite { return sign | 0x7C00 }
        if value == 0 { return sign }
        let magnitude = abs(value)
        // Subnormal halves are multiples of 2⁻²⁴ below 2⁻¹⁴.
        if magnitude < 0x1p-14 {
            let units = magnitude / 0x1p-24
            guard units == units.rounded(), units >= 1 else { return nil }
            return sign | UInt16(units)
        }
        let exponent = Int(magnitude.exponent)  // magnitude = significand × 2^exponent, significand in [1, 2)
        guard exponent <= 15 else { return nil }
        let scaled = magnitude.significand * 1024  // 1024…2047 when exact
        guard scaled == scaled.rounded() else { return nil }
        return sign | UInt16(exponent + 15) << 10 | (UInt16(scaled) - 1024)
    }
}
