/// What an observation measures, with its IEEE 11073-10101 (MDC) code: one table, one place.
///
/// Codes are the 32-bit context-free form (partition × 2^16 + term code; partition 2 = SCADA). Sources, per row:
///   [PHD-IG]  HL7 FHIR Personal Health Device Implementation Guide, the codes it lists for the Bluetooth SIG
///             profiles (as gathered in the project notes, shared/notes/health-profiles.md "Backend representations").
///   [10101]   IEEE 11073-10101 nomenclature, term code as listed there (and in the device specialization named);
///             taken from the standard's published tables, not cross-checked against a second public copy here.
///   nil       no MDC term we could attribute with confidence; the store keys these by `HealthMetric.rawValue`.
public enum HealthMetric: String, Hashable, Sendable, Encodable, CaseIterable {
    case bloodPressureSystolic = "blood_pressure_systolic"
    case bloodPressureDiastolic = "blood_pressure_diastolic"
    case bloodPressureMean = "blood_pressure_mean"
    case cuffPressure = "cuff_pressure"
    case pulseRateNonInvasive = "pulse_rate_non_invasive"
    case heartRate = "heart_rate"
    case rrInterval = "rr_interval"
    case energyExpended = "energy_expended"
    case bodyTemperature = "body_temperature"
    case bodyMass = "body_mass"
    case bodyHeight = "body_height"
    case bodyMassIndex = "body_mass_index"
    case bodyFatPercentage = "body_fat_percentage"
    case basalMetabolism = "basal_metabolism"
    case musclePercentage = "muscle_percentage"
    case muscleMass = "muscle_mass"
    case fatFreeMass = "fat_free_mass"
    case softLeanMass = "soft_lean_mass"
    case bodyWaterMass = "body_water_mass"
    case bodyImpedance = "body_impedance"
    case oxygenSaturation = "oxygen_saturation"
    case oximeterPulseRate = "oximeter_pulse_rate"
    case pulseAmplitudeIndex = "pulse_amplitude_index"
    case glucose = "glucose"
    case cgmGlucose = "cgm_glucose"
    case cgmTrend = "cgm_trend"
    case cgmQuality = "cgm_quality"
    case carbohydrateIntake = "carbohydrate_intake"
    case exerciseDuration = "exercise_duration"
    case exerciseIntensity = "exercise_intensity"
    case medication = "medication"
    case hbA1c = "hba1c"

    /// The MDC code, or nil (see the table's sources).
    public var mdcCode: UInt32? { Self.table[self]?.code }

    /// The MDC reference identifier, for people reading rows and logs.
    public var mdcReferenceID: String? { Self.table[self]?.referenceID }

    /// Where the code comes from.
    public var mdcSource: String? { Self.table[self]?.source }

    /// The metric a stored MDC code names: a metric's own code, or a code more specific than it (a glucose
    /// concentration's specimen, `GlucoseSpecimen`).
    public static func named(mdcCode: UInt32) -> HealthMetric? {
        if let metric = allCases.first(where: { $0.mdcCode == mdcCode }) { return metric }
        return GlucoseSpecimen.allCodes.contains(mdcCode) ? .glucose : nil
    }

    struct Entry: Sendable {
        let code: UInt32
        let referenceID: String
        let source: String
    }

    static let table: [HealthMetric: Entry] = [
        .bloodPressureSystolic: Entry(code: 150_021, referenceID: "MDC_PRESS_BLD_NONINV_SYS", source: "[PHD-IG] 150020-150023; IEEE 11073-10407"),
        .bloodPressureDiastolic: Entry(code: 150_022, referenceID: "MDC_PRESS_BLD_NONINV_DIA", source: "[PHD-IG]; IEEE 11073-10407"),
        .bloodPressureMean: Entry(code: 150_023, referenceID: "MDC_PRESS_BLD_NONINV_MEAN", source: "[PHD-IG]; IEEE 11073-10407"),
        // The cuff's live pressure is never stored; the compound NIBP code names it for display.
        .cuffPressure: Entry(code: 150_020, referenceID: "MDC_PRESS_BLD_NONINV", source: "[PHD-IG]; IEEE 11073-10407"),
        .pulseRateNonInvasive: Entry(code: 149_546, referenceID: "MDC_PULS_RATE_NON_INV", source: "[PHD-IG]; IEEE 11073-10407"),
        .heartRate: Entry(code: 147_842, referenceID: "MDC_ECG_HEART_RATE", source: "[10101] partition 2, term 16770"),
        .rrInterval: Entry(code: 147_240, referenceID: "MDC_ECG_TIME_PD_RR_GL", source: "[10101] partition 2, term 16168"),
        .bodyTemperature: Entry(code: 150_364, referenceID: "MDC_TEMP_BODY", source: "[PHD-IG]; IEEE 11073-10408"),
        .bodyMass: Entry(code: 188_736, referenceID: "MDC_MASS_BODY_ACTUAL", source: "[PHD-IG]; IEEE 11073-10415"),
        .bodyHeight: Entry(code: 188_740, referenceID: "MDC_LEN_BODY_ACTUAL", source: "[10101] IEEE 11073-10415, term 57668"),
        .bodyMassIndex: Entry(code: 188_752, referenceID: "MDC_RATIO_MASS_BODY_LEN_SQ", source: "[10101] IEEE 11073-10415, term 57680"),
        .bodyFatPercentage: Entry(code: 188_748, referenceID: "MDC_BODY_FAT", source: "[10101] IEEE 11073-10420, term 57676"),
        .oxygenSaturation: Entry(code: 150_456, referenceID: "MDC_PULS_OXIM_SAT_O2", source: "[PHD-IG]; IEEE 11073-10404"),
        .oximeterPulseRate: Entry(code: 149_530, referenceID: "MDC_PULS_OXIM_PULS_RATE", source: "[10101] IEEE 11073-10404, term 18458"),
        .pulseAmplitudeIndex: Entry(code: 150_448, referenceID: "MDC_PULS_OXIM_PERF_REL", source: "[10101] IEEE 11073-10404, term 19376"),
        // The generic term, for a record that names no specimen; a typed record's observation carries its specimen's
        // code instead (GlucoseSpecimen). 160368, used here before under this name, is MDC_CONC_GLU_UNDETERMINED_PLASMA.
        .glucose: Entry(code: 160_020, referenceID: "MDC_CONC_GLU_GEN", source: "[10101] IEEE 11073-10417, partition 2, term 28948"),
        .cgmGlucose: Entry(code: 160_212, referenceID: "MDC_CONC_GLU_ISF", source: "[10101] IEEE 11073-10425, term 29140"),
        // Partition 128 (MDC_PART_PHD_DM) << 16 | term 29156, as 11073 nomenclature headers list it (e.g. github
        // cdealti/zigbee_firmware, BeeApps/HC/NomenclatureCodes.h): the cold lane stores a Glucose Context's carbohydrate.
        .carbohydrateIntake: Entry(code: 8_417_764, referenceID: "MDC_CTXT_GLU_CARB", source: "IEEE 11073-10417, partition 128, term 29156"),
        // Term 29148 in partition 2, as the public copies of the 11073 nomenclature tables list it (C headers and Java
        // constants from the Continua era, beside MDC_CONC_GLU_ISF 29140). Term 29236, used here before, is
        // MDC_CTXT_GLU_SAMPLELOCATION (partition 128): a context attribute, not a concentration.
        .hbA1c: Entry(code: 160_220, referenceID: "MDC_CONC_HBA1C", source: "IEEE 11073-10417, partition 2, term 29148"),
    ]
}
