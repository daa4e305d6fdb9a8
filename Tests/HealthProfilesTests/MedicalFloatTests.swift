import Testing
@testable import HealthProfiles

/// IEEE 11073-20601 Annex F.8 SFLOAT/FLOAT, with the special values as the standard lists them (and as the project
/// notes, shared/notes/health-profiles.md, repeat them).
@Suite struct MedicalFloatTests {
    /// Vectors from NordicSemiconductor/Android-BLE-Common-Library, ble-common/src/test/.../bps/
    /// BloodPressureMeasurementDataCallbackTest.java (commit c078e257): 0xF0BD = 18.9, 0x000B = 11, 0x008A = 138;
    /// and .../ht/TemperatureMeasurementDataCallbackTest.java: FLOAT 0xFE000EB0 = 37.60.
    @Test func nordicGoldenValues() {
        #expect(MedicalFloat.sfloat(0xF0BD).decimal == dec(189, -1))
        #expect(MedicalFloat.sfloat(0xF0BD).description == "18.9")
        #expect(MedicalFloat.sfloat(0x000B).decimal == dec(11))
        #expect(MedicalFloat.sfloat(0x008A).decimal == dec(138))
        #expect(MedicalFloat.sfloat(0xF09F).description == "15.9")
        let temperature = MedicalFloat.float(0xFE00_0EB0)
        #expect(temperature.mantissa == 3760 && temperature.exponent == -2)
        #expect(temperature.description == "37.60")
    }

    @Test func sfloatSpecialValuesAreStatusesNeverNumbers() {
        let cases: [(UInt16, ValueStatus)] = [
            (0x07FF, .nan), (0x0800, .nres), (0x07FE, .positiveInfinity), (0x0802, .negativeInfinity), (0x0801, .reserved),
        ]
        for (raw, status) in cases {
            let value = MedicalFloat.sfloat(raw)
            #expect(value.status == status, "0x\(String(raw, radix: 16))")
            #expect(value.decimal == nil, "0x\(String(raw, radix: 16)) must not be a number (NaN stored as 2047 mmHg)")
            #expect(value.measured.decimal == nil)
        }
        // The same mantissas with another exponent are numbers: only exponent 0 carries the special codes.
        #expect(MedicalFloat.sfloat(0x17FF).decimal == dec(2047, 1))
        #expect(MedicalFloat.sfloat(0xF800).decimal == dec(-2048, -1))
    }

    @Test func floatSpecialValuesAreStatusesNeverNumbers() {
        let cases: [(UInt32, ValueStatus)] = [
            (0x007F_FFFF, .nan), (0x0080_0000, .nres), (0x007F_FFFE, .positiveInfinity), (0x0080_0002, .negativeInfinity),
            (0x0080_0001, .reserved),
        ]
        for (raw, status) in cases {
            #expect(MedicalFloat.float(raw).status == status)
            #expect(MedicalFloat.float(raw).decimal == nil)
        }
        #expect(MedicalFloat.float(0x017F_FFFF).decimal == dec(8_388_607, 1))
    }

    @Test func twosComplementMantissaAndExponent() {
        // SFLOAT: exponent -1 (0xF), mantissa -1 (0xFFF) = -0.1.
        #expect(MedicalFloat.sfloat(0xFFFF).decimal == dec(-1, -1))
        #expect(MedicalFloat.sfloat(0xFFFF).description == "-0.1")
        // Exponent +7 (0x7), mantissa 1 = 10000000; exponent -8 (0x8), mantissa 1 = 0.00000001.
        #expect(MedicalFloat.sfloat(0x7001).description == "10000000")
        #expect(MedicalFloat.sfloat(0x8001).description == "0.00000001")
        // FLOAT: exponent -128 is representable; mantissa -2^23 + 3 with exponent -1.
        #expect(MedicalFloat.float(0xFF80_0003).decimal == dec(-8_388_605, -1))
        #expect(MedicalFloat.float(0x8000_0001).exponent == -128)
    }

    /// 120.5 stays 120.5: mantissa 1205, exponent -1, never a binary float's 120.49999.
    @Test func exactDecimalsKeepTheReportedDigits() {
        let value = MedicalFloat.sfloat(0xF4B5)  // exponent -1, mantissa 0x4B5 = 1205
        #expect(value.description == "120.5")
        #expect(value.decimal == dec(1205, -1))
        #expect(dec(1200, -1).description == "120.0")
        #expect(dec(1200, -1).isNumericallyEqual(to: dec(120)))
        #expect(dec(5, -3).description == "0.005")
        #expect(dec(-5, -3).description == "-0.005")
    }
}
