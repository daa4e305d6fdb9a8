/// The codes the FHIR export writes for a stored MDC metric code: the MDC code itself (always), its reference id as
/// display, the LOINC code where one is given by the sources below, and whether it is a vital sign. One table, one
/// place; the server keeps its own copy rather than link the gateway's HealthProfiles (Package.swift's layering).
///
/// Sources, per row:
///   [VS]     FHIR R4 Vital Signs profile (hl7.org/fhir/R4/observation-vitalsigns.html, "Vital Signs Panel" table):
///            8480-6 systolic, 8462-4 diastolic (components of the BP panel 85354-9), 8867-4 heart rate, 8310-5
///            body temperature, 29463-7 body weight, 2708-6 oxygen saturation; category `vital-signs`.
///   [PHD]    HL7 FHIR Personal Health Device IG STU1 (hl7.org/fhir/uv/phd/STU1), example Observation
///            spotnumeric-1.0.0.3: MDC 149530 coded together with LOINC 8867-4; the IG codes every PHD value by its
///            MDC code (system urn:iso:std:iso:11073:10101) and adds the vital-signs LOINC code where there is one.
///   [USCore] US Core Pulse Oximetry profile (hl7.org/fhir/us/core, StructureDefinition-us-core-pulse-oximetry):
///            59408-5 beside 2708-6.
///   [VSIG]   HL7 Vital Signs IG (hl7.org/fhir/us/vitals), mean arterial pressure: LOINC 8478-0 "Mean blood pressure".
///   MDC codes and reference ids: IEEE 11073-10101 as Sources/Core/HealthProfiles/Values/HealthMetric.swift and
///   GlucoseSpecimen.swift list them (IEEE 11073-10407 blood pressure, -10404 pulse oximetry, -10408 thermometer,
///   -10415 weighing scale, -10417 glucose).
///
/// Glucose carries no LOINC code: LOINC codes glucose by specimen, method and property (mass or substance
/// concentration), which the MDC specimen codes do not all pin down, and the PHD IG codes glucose by MDC alone.
/// Blood pressure goes out as individual Observations (systolic, diastolic, mean), not as the 85354-9 panel: the
/// gateway stores and uploads each as its own sample, with its own uid, and the panel would need all three at once.
public enum FHIRVocabulary {
    public static let mdcSystem = "urn:iso:std:iso:11073:10101"
    public static let loincSystem = "http://loinc.org"
    public static let ucumSystem = "http://unitsofmeasure.org"
    public static let categorySystem = "http://terminology.hl7.org/CodeSystem/observation-category"
    /// FHIR R4 CodeSystem data-absent-reason (hl7.org/fhir/R4/codesystem-data-absent-reason.html).
    public static let dataAbsentReasonSystem = "http://terminology.hl7.org/CodeSystem/data-absent-reason"

    public struct LOINC: Hashable, Sendable {
        public let code: String
        public let display: String
    }

    public struct Entry: Hashable, Sendable {
        public let referenceID: String
        public let loinc: [LOINC]
        public let vitalSign: Bool
    }

    /// What the export knows of `mdcCode`; `nil` for a code outside the table (exported with its MDC code only).
    public static func entry(_ mdcCode: Int) -> Entry? { table[mdcCode] }

    private static func vital(_ referenceID: String, _ loinc: [LOINC]) -> Entry { Entry(referenceID: referenceID, loinc: loinc, vitalSign: true) }
    private static func other(_ referenceID: String) -> Entry { Entry(referenceID: referenceID, loinc: [], vitalSign: false) }

    private static let heartRate = LOINC(code: "8867-4", display: "Heart rate")

    static let table: [Int: Entry] = [
        150_021: vital("MDC_PRESS_BLD_NONINV_SYS", [LOINC(code: "8480-6", display: "Systolic blood pressure")]),  // [VS]
        150_022: vital("MDC_PRESS_BLD_NONINV_DIA", [LOINC(code: "8462-4", display: "Diastolic blood pressure")]),  // [VS]
        150_023: vital("MDC_PRESS_BLD_NONINV_MEAN", [LOINC(code: "8478-0", display: "Mean blood pressure")]),  // [VSIG]
        149_546: vital("MDC_PULS_RATE_NON_INV", [heartRate]),  // [VS], [PHD]
        149_530: vital("MDC_PULS_OXIM_PULS_RATE", [heartRate]),  // [PHD] spotnumeric-1.0.0.3
        147_842: vital("MDC_ECG_HEART_RATE", [heartRate]),  // [VS]
        150_364: vital("MDC_TEMP_BODY", [LOINC(code: "8310-5", display: "Body temperature")]),  // [VS]
        188_736: vital("MDC_MASS_BODY_ACTUAL", [LOINC(code: "29463-7", display: "Body weight")]),  // [VS]
        150_456: vital(
            "MDC_PULS_OXIM_SAT_O2",
            [
                LOINC(code: "2708-6", display: "Oxygen saturation in Arterial blood"),  // [VS]
                LOINC(code: "59408-5", display: "Oxygen saturation in Arterial blood by Pulse oximetry"),  // [USCore]
            ]),
        // Glucose by specimen (IEEE 11073-10417; GLS v1.0.1 §3.106.5 types 1…10), and the generic code.
        160_020: other("MDC_CONC_GLU_GEN"),
        160_184: other("MDC_CONC_GLU_CAPILLARY_WHOLEBLOOD"),
        160_188: other("MDC_CONC_GLU_CAPILLARY_PLASMA"),
        160_192: other("MDC_CONC_GLU_VENOUS_WHOLEBLOOD"),
        160_196: other("MDC_CONC_GLU_VENOUS_PLASMA"),
        160_200: other("MDC_CONC_GLU_ARTERIAL_WHOLEBLOOD"),
        160_204: other("MDC_CONC_GLU_ARTERIAL_PLASMA"),
        160_364: other("MDC_CONC_GLU_UNDETERMINED_WHOLEBLOOD"),
        160_368: other("MDC_CONC_GLU_UNDETERMINED_PLASMA"),
        160_212: other("MDC_CONC_GLU_ISF"),
        160_208: other("MDC_CONC_GLU_CONTROL"),
    ]
}
