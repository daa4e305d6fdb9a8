import HealthProfiles
import Testing

/// What a measurement says of its device's clock (`DecodedHealthValue.clockNotSetEvidence`), from bytes written
/// here by hand from the profiles' field tables.
struct ClockNotSetEvidenceTests {
    static func evidence(_ characteristic: HealthCharacteristic, _ bytes: [UInt8]) throws -> TimeWritePolicy.ClockNotSetEvidence? {
        try HealthDecoder.decode(characteristic: characteristic, bytes: bytes).clockNotSetEvidence
    }

    /// PLXS v1.0.1 §3.1.1: flags, SpO2 98 % and PR 70 bpm (SFLOAT, exponent 0); flags bit 4 "device clock is not
    /// set". The flag is the evidence, stamped or not.
    @Test func aSpotCheckFlaggingItsClock() throws {
        #expect(try Self.evidence(.plxSpotCheckMeasurement, [0x10, 0x62, 0x00, 0x46, 0x00]) == .plxDeviceClockNotSet)
        #expect(try Self.evidence(.plxSpotCheckMeasurement, [0x00, 0x62, 0x00, 0x46, 0x00]) == nil)
        // Stamped 2026-11-28 10:00:00 and flagged all the same.
        let stamp: [UInt8] = [0xEA, 0x07, 11, 28, 10, 0, 0]
        #expect(try Self.evidence(.plxSpotCheckMeasurement, [0x11, 0x62, 0x00, 0x46, 0x00] + stamp) == .plxDeviceClockNotSet)
        #expect(try Self.evidence(.plxSpotCheckMeasurement, [0x01, 0x62, 0x00, 0x46, 0x00] + stamp) == nil)
    }

    /// BLS v1.1.1 §3.1.1: flags bit 1 (time stamp present, mmHg), systolic 120, diastolic 80, MAP 93, then a Date
    /// Time whose year, month and day 0 say "not known" (GSS, Date Time).
    @Test func aCuffStampWithADateNotKnown() throws {
        let pressures: [UInt8] = [0x78, 0x00, 0x50, 0x00, 0x5D, 0x00]
        #expect(try Self.evidence(.bloodPressureMeasurement, [0x02] + pressures + [0, 0, 0, 0, 0, 0, 0]) == .dateNotKnown)
        #expect(try Self.evidence(.bloodPressureMeasurement, [0x02] + pressures + [0xEA, 0x07, 11, 28, 10, 0, 0]) == nil)
        #expect(try Self.evidence(.bloodPressureMeasurement, [0x00] + pressures) == nil, "no stamp, no evidence")
    }

    /// CGMS v1.0.1 §3.2.1: one record of size 7, flags bit 6 (Cal/Temp octet present), 100 mg/dL, time offset 5
    /// minutes, Cal/Temp octet bit 0 "time synchronization between sensor and collector required".
    @Test func aCGMRecordAskingForTimeSynchronization() throws {
        #expect(try Self.evidence(.cgmMeasurement, [0x07, 0x40, 0x64, 0x00, 0x05, 0x00, 0x01]) == .deviceStatus)
        // Calibration recommended (bit 2) is not about the clock.
        #expect(try Self.evidence(.cgmMeasurement, [0x07, 0x40, 0x64, 0x00, 0x05, 0x00, 0x04]) == nil)
    }

    /// A heart-rate value carries no time at all: nothing to say.
    @Test func aValueWithoutTime() throws {
        #expect(try Self.evidence(.heartRateMeasurement, [0x00, 72]) == nil)
    }
}
