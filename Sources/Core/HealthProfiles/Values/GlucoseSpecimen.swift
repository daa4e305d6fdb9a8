/// The MDC code of a glucose concentration by the specimen it was measured in: the Glucose Measurement's Type
/// (GLS v1.0.1 §3.106.5, the low nibble of Type-Sample Location) names it, and IEEE 11073-10417 codes each type as
/// its own MDC_CONC_GLU_* term. A plasma value reads about 11 % higher than a whole-blood value of the same blood,
/// so the specimen is part of what the number means, not a remark beside it.
///
/// Terms in partition 2 (SCADA), as the public copies of the IEEE 11073-10101 tables list them (the Continua-era
/// C headers, e.g. the Antidote 11073 agent's nomenclature.h, and the 10417-2015 additions 29292/29296; HL7 PHD
/// examples code 160368 as MDC_CONC_GLU_UNDETERMINED_PLASMA). A record without a type, or with a reserved one, is
/// MDC_CONC_GLU_GEN (`HealthMetric.glucose`'s own code).
public enum GlucoseSpecimen {
    public struct Code: Hashable, Sendable {
        public let code: UInt32
        public let referenceID: String
    }

    /// The code for GLS type `type` (1…10), or nil for a reserved type.
    public static func code(forType type: UInt8) -> Code? {
        table[type]
    }

    /// Every specimen-specific code, for reading a stored code back to its metric.
    public static var allCodes: [UInt32] { table.values.map(\.code) }

    static let table: [UInt8: Code] = [
        1: Code(code: 2 << 16 | 29112, referenceID: "MDC_CONC_GLU_CAPILLARY_WHOLEBLOOD"),
        2: Code(code: 2 << 16 | 29116, referenceID: "MDC_CONC_GLU_CAPILLARY_PLASMA"),
        3: Code(code: 2 << 16 | 29120, referenceID: "MDC_CONC_GLU_VENOUS_WHOLEBLOOD"),
        4: Code(code: 2 << 16 | 29124, referenceID: "MDC_CONC_GLU_VENOUS_PLASMA"),
        5: Code(code: 2 << 16 | 29128, referenceID: "MDC_CONC_GLU_ARTERIAL_WHOLEBLOOD"),
        6: Code(code: 2 << 16 | 29132, referenceID: "MDC_CONC_GLU_ARTERIAL_PLASMA"),
        7: Code(code: 2 << 16 | 29292, referenceID: "MDC_CONC_GLU_UNDETERMINED_WHOLEBLOOD"),
        8: Code(code: 2 << 16 | 29296, referenceID: "MDC_CONC_GLU_UNDETERMINED_PLASMA"),
        9: Code(code: 2 << 16 | 29140, referenceID: "MDC_CONC_GLU_ISF"),
        10: Code(code: 2 << 16 | 29136, referenceID: "MDC_CONC_GLU_CONTROL"),
    ]
}
