import Testing
import TetherGateway
import TetherPrimitives
import TetherStore

/// `HealthCorrection`: what a technician's correction makes of a stored sample (issue 15, item 2). Canonical values
/// here are worked by hand from the definitions the conversions cite, not taken from the converter.
struct HealthCorrectionTests {
    static func sample(_ value: HealthValue, userIndex: Int? = nil) -> HealthSample {
        HealthSample(
            metricCode: 150_021, value: value, effectiveAt: Timestamp(nanoseconds: 1_795_000_000_000_000_000),
            deviceTime: "2026-11-20T08:00:00", timeBasis: .coincidentClockReading, skewMilliseconds: 1_200, userIndex: userIndex,
            recordSequence: 4, epoch: 1, lane: .hot, characteristic: "00002a35-0000-1000-8000-00805f9b34fb",
            rawBytes: [0x1E, 0x78, 0x00], parserVersion: 3, receivedAt: Timestamp(nanoseconds: 1_795_000_001_000_000_000))
    }

    static func decimal(_ text: String) -> HealthDecimal { HealthDecimal(text)! }

    static let mmHg = HealthValue.number(decimal("120"), unit: "mm[Hg]", canonical: decimal("120"), unit: "mm[Hg]")

    @Test func aValueIsReplacedInTheReportedUnitAndEverythingElseKept() throws {
        let original = Self.sample(Self.mmHg)
        let replacement = try HealthCorrection(value: Self.decimal("118")).replacement(of: original)
        #expect(replacement.value == .number(Self.decimal("118"), unit: "mm[Hg]", canonical: Self.decimal("118"), unit: "mm[Hg]"))
        #expect(replacement.lane == .change && replacement.rawBytes == nil && replacement.parserVersion == nil)
        // Time, device time, basis, skew, key, epoch, metric and characteristic are the reading's own.
        var expected = original
        expected.value = replacement.value
        expected.lane = .change
        expected.rawBytes = nil
        expected.parserVersion = nil
        #expect(replacement == expected)
    }

    /// kPa → mm[Hg]: 1 mmHg = 133.322387415 Pa, so 16.0 kPa = 16000 / 133.322387415 = 120.0098… mmHg, rounded half
    /// to even at the reported fraction digits (1) + 2: 120.010.
    @Test func aKilopascalValueGetsItsCanonicalValueConvertedAgain() throws {
        let original = Self.sample(.number(Self.decimal("15.9"), unit: "kPa", canonical: Self.decimal("119.260"), unit: "mm[Hg]"))
        let replacement = try HealthCorrection(value: Self.decimal("16.0")).replacement(of: original)
        #expect(replacement.value.reported == Self.decimal("16.0") && replacement.value.reportedUnit == "kPa")
        #expect(replacement.value.canonical.map { "\($0)" } == "120.010" && replacement.value.canonicalUnit == "mm[Hg]")
    }

    /// lb → kg is exact (1 lb = 0.45359237 kg): 150.2 lb = 68.129573974 kg.
    @Test func aPoundValueConvertsExactly() throws {
        let original = Self.sample(.number(Self.decimal("150.4"), unit: "[lb_av]", canonical: Self.decimal("68.220292448"), unit: "kg"))
        let replacement = try HealthCorrection(value: Self.decimal("150.2")).replacement(of: original)
        #expect(replacement.value.canonical.map { "\($0)" } == "68.129573974")
    }

    @Test func aUserIndexMovesTheReadingToAnotherPerson() throws {
        let replacement = try HealthCorrection(userIndex: 2).replacement(of: Self.sample(Self.mmHg, userIndex: 1))
        #expect(replacement.userIndex == 2 && replacement.value == Self.mmHg)
        #expect(throws: HealthCorrectionError.userIndexOutOfRange(255)) { try HealthCorrection(userIndex: 255).replacement(of: Self.sample(Self.mmHg)) }
    }

    @Test func refusals() {
        let original = Self.sample(Self.mmHg, userIndex: 1)
        #expect(throws: HealthCorrectionError.nothingToCorrect) { try HealthCorrection().replacement(of: original) }
        // The same number written differently, and the same user: nothing new.
        #expect(throws: HealthCorrectionError.nothingToCorrect) { try HealthCorrection(value: Self.decimal("120.0"), userIndex: 1).replacement(of: original) }
        // A failed measurement (NaN) has no value to correct; its user may still be corrected.
        let failed = Self.sample(.special(.nan, reportedUnit: "mm[Hg]", canonicalUnit: "mm[Hg]"))
        #expect(throws: HealthCorrectionError.notANumber("nan")) { try HealthCorrection(value: Self.decimal("120")).replacement(of: failed) }
        #expect((try? HealthCorrection(userIndex: 3).replacement(of: failed))?.value.status == .nan)
        let unknownUnit = Self.sample(.number(Self.decimal("5"), unit: "furlong", canonical: Self.decimal("5"), unit: "furlong"))
        #expect(throws: HealthCorrectionError.unknownUnit("furlong")) { try HealthCorrection(value: Self.decimal("6")).replacement(of: unknownUnit) }
        // More fraction digits than the store's exponent column holds.
        let tiny = HealthDecimal(mantissa: 1, exponent: -200)
        #expect(throws: HealthCorrectionError.valueOutOfRange(tiny.description)) { try HealthCorrection(value: tiny).replacement(of: original) }
    }
}
