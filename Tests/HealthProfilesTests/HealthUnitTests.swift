import Testing
@testable import HealthProfiles

@Suite struct HealthUnitTests {
    /// Exact conversions: the international pound is 0.45359237 kg and the inch 0.0254 m by definition (1959).
    @Test func exactConversions() {
        #expect(HealthUnit.pound.canonicalValue(dec(15700, -2)) == .exact(dec(71_214_002_09, -8)))
        #expect(HealthUnit.pound.canonicalValue(dec(1)) == .exact(dec(45_359_237, -8)))
        #expect(HealthUnit.inch.canonicalValue(dec(680, -1)) == .exact(dec(17272, -4)))
        #expect(HealthUnit.kilogramPerLitre.canonicalValue(dec(95, -5)) == .exact(dec(95)))  // 0.00095 kg/L = 95 mg/dL
        #expect(HealthUnit.molePerLitre.canonicalValue(dec(53, -4)) == .exact(dec(53, -1)))  // 0.0053 mol/L = 5.3 mmol/L
        #expect(HealthUnit.millimetreOfMercury.canonicalValue(dec(1205, -1)) == .exact(dec(1205, -1)))
    }

    /// kPa → mm[Hg] divides by 0.133322387415 (1 mmHg = 133.322387415 Pa): rounded half to even at the reported
    /// fraction digits + 2, and marked inexact. 18.9 kPa = 141.7620... mmHg, 16.0 kPa = 120.0098... mmHg (checked
    /// with Python's decimal module at 50 digits).
    @Test func roundedConversions() {
        #expect(HealthUnit.kilopascal.canonicalValue(dec(189, -1)) == .rounded(dec(141_762, -3)))
        #expect(HealthUnit.kilopascal.canonicalValue(dec(160, -1)) == .rounded(dec(120_010, -3)))
        #expect(HealthUnit.fahrenheit.canonicalValue(dec(986, -1)) == .rounded(dec(37_000, -3)))  // 98.6 °F = 37 °C
        #expect(HealthUnit.fahrenheit.canonicalValue(dec(32)) == .rounded(dec(0, -2)))
        #expect(HealthUnit.fahrenheit.canonicalValue(dec(-40)) == .rounded(dec(-4000, -2)))
        // Half to even: 0.125 rounded to 2 places is 0.12, 0.375 is 0.38.
        #expect(dec(1, -3).divided(by: dec(8, -3), fractionDigits: 2) == dec(12, -2))  // 0.125
        #expect(dec(3, -3).divided(by: dec(8, -3), fractionDigits: 2) == dec(38, -2))  // 0.375
    }

    @Test func canonicalUnitsPerDimension() {
        #expect(HealthUnit.kilopascal.canonical == .millimetreOfMercury)
        #expect(HealthUnit.fahrenheit.canonical == .celsius)
        #expect(HealthUnit.pound.canonical == .kilogram)
        #expect(HealthUnit.inch.canonical == .metre)
        #expect(HealthUnit.kilogramPerLitre.canonical == .milligramPerDecilitre)
        #expect(HealthUnit.molePerLitre.canonical == .millimolePerLitre)
        for unit in HealthUnit.allCases { #expect(unit.canonical.canonical == unit.canonical) }
    }

    /// The MDC table: the codes the PHD implementation guide lists (shared/notes/health-profiles.md) are these, and
    /// every code is partition 2 (SCADA) as the 32-bit form says, but for the glucose context's carbohydrate, which
    /// IEEE 11073-10417 puts in partition 128 (MDC_PART_PHD_DM, term 29156).
    @Test func mdcCodes() {
        #expect(HealthMetric.bloodPressureSystolic.mdcCode == 150_021)
        #expect(HealthMetric.bloodPressureDiastolic.mdcCode == 150_022)
        #expect(HealthMetric.bloodPressureMean.mdcCode == 150_023)
        #expect(HealthMetric.pulseRateNonInvasive.mdcCode == 149_546)
        #expect(HealthMetric.glucose.mdcCode == 160_020)  // MDC_CONC_GLU_GEN, term 28948: no specimen named
        #expect(HealthMetric.oxygenSaturation.mdcCode == 150_456)
        #expect(HealthMetric.bodyMass.mdcCode == 188_736)
        #expect(HealthMetric.bodyTemperature.mdcCode == 150_364)
        #expect(HealthMetric.carbohydrateIntake.mdcCode == 8_417_764)
        // MDC_CONC_HBA1C: partition 2, term 29148 (the public copies of the 11073 nomenclature tables).
        #expect(HealthMetric.hbA1c.mdcCode == 160_220)  // 2 × 65536 + 29148
        for metric in HealthMetric.allCases {
            guard let code = metric.mdcCode else { continue }
            #expect(code >> 16 == (metric == .carbohydrateIntake ? 128 : 2), "\(metric)")
            #expect(metric.mdcSource?.isEmpty == false)
        }
        let codes = HealthMetric.allCases.compactMap(\.mdcCode)
        #expect(Set(codes).count == codes.count, "one metric per code")
    }
}
