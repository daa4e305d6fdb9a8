/// The resolutions of the Weight Scale and Body Composition services' fixed-point fields (WSS v1.0 §3.2.1,
/// BCS v1.0 §3.2.1), chosen by the flags' unit bit: SI or imperial.
enum MeasurementSystem: String, Hashable, Sendable, Encodable {
    case si, imperial

    /// 0.005 kg or 0.01 lb per step.
    var massUnit: HealthUnit { self == .si ? .kilogram : .pound }
    var massResolution: ExactDecimal { self == .si ? ExactDecimal(significand: 5, exponent: -3) : ExactDecimal(significand: 1, exponent: -2) }
    /// 0.001 m or 0.1 in per step.
    var heightUnit: HealthUnit { self == .si ? .metre : .inch }
    var heightResolution: ExactDecimal { self == .si ? ExactDecimal(significand: 1, exponent: -3) : ExactDecimal(significand: 1, exponent: -1) }

    /// A uint16 fixed-point field; 0xFFFF is "measurement unsuccessful" where the service defines it (weight,
    /// body fat percentage), kept as status `nan`, never as 327.675 kg.
    static func fixedPoint(_ raw: UInt16, resolution: ExactDecimal, unsuccessfulIsFFFF: Bool) -> MeasuredValue {
        if unsuccessfulIsFFFF && raw == 0xFFFF { return MeasuredValue(status: .nan, decimal: nil) }
        return .fixedPoint(Int64(raw), resolution: resolution)
    }
}
