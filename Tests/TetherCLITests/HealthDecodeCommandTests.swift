import ArgumentParser
import Foundation
import HealthProfiles
import Testing
@testable import TetherCLI

/// `tether health decode`: argument forms, the report it prints, and the built binary's exit status.
@Suite("tether health decode")
struct HealthDecodeCommandTests {
    /// Nordic's BPM `_full` vector (Android-BLE-Common-Library, BloodPressureMeasurementDataCallbackTest.java).
    static let bloodPressureHex = "1E 8A 00 58 00 78 00 00 00 04 11 14 29 3B 3C 00 01 27 00"

    @Test("the characteristic as 2A35, 0x2A35, the full UUID, sfloat or float; hex in pieces with spaces and colons")
    func forms() throws {
        let forms: [[String]] = [
            ["health", "decode", "--characteristic", "2A35", "1E8A00", "5800", "7800"],
            ["health", "decode", "--characteristic", "0x2a35", "1E:8A:00:58:00:78:00"],
            ["health", "decode", "--characteristic", "00002a35-0000-1000-8000-00805f9b34fb", Self.bloodPressureHex, "--json"],
            ["health", "decode", "--characteristic", "sfloat", "FF07"],
            ["health", "decode", "--characteristic", "FLOAT", "0x", "B00E00FE"],
        ]
        for form in forms {
            #expect(throws: Never.self, "\(form)") { _ = try TetherRootCommand.parseAsRoot(form) }
        }
        #expect(HealthDecodeTarget.parseHex(["1e:8A", "0x00 58"]) == [0x1E, 0x8A, 0x00, 0x58])
        #expect(HealthDecodeTarget.parseHex(["1E8"]) == nil)
        #expect(HealthDecodeTarget.parseHex(["1G"]) == nil)
        #expect(HealthDecodeTarget("2A35") == .characteristic(.bloodPressureMeasurement))
        #expect(HealthDecodeTarget("sfloat") == .sfloat && HealthDecodeTarget("float") == .float)
    }

    @Test("bad arguments are usage errors naming what is wrong")
    func badArguments() {
        let cases: [([String], String)] = [
            (["health", "decode", "--characteristic", "2A52", "00"], "'2A52' is not a health characteristic"),
            (["health", "decode", "--characteristic", "2A35", "1E8"], "is not hex"),
            (["health", "decode", "--characteristic", "2A35"], "Give the value as hex."),
        ]
        for (arguments, expected) in cases {
            do {
                _ = try TetherRootCommand.parseAsRoot(arguments)
                Issue.record("\(arguments) parsed")
            } catch {
                #expect(TetherRootCommand.exitCode(for: error) == .validationFailure, "\(arguments)")
                #expect(TetherRootCommand.fullMessage(for: error).contains(expected), "\(arguments): \(TetherRootCommand.fullMessage(for: error))")
            }
        }
    }

    @Test("--json prints every field in the spec's units and the samples it would store")
    func jsonReport() throws {
        let bytes = try #require(HealthDecodeTarget.parseHex([Self.bloodPressureHex]))
        let report = HealthDecodeReport.make(target: .characteristic(.bloodPressureMeasurement), bytes: bytes)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try report.json().utf8)) as? [String: Any])
        #expect(object["valid"] as? Bool == true)
        #expect(object["characteristic"] as? String == "0x2A35")
        #expect(object["parser_version"] as? Int == HealthDecoder.parserVersion)
        let fields = try #require(object["fields"] as? [String: Any])
        #expect(fields["unit"] as? String == "mm[Hg]")
        #expect((fields["systolic"] as? [String: Any])?["value"] as? String == "138")
        #expect(fields["user_id"] as? Int == 1)
        #expect(fields["time_stamp"] as? String == "0000-04-17T20:41:59")
        #expect((fields["status"] as? [String: Any])?["cuff_fit_too_loose"] as? Bool == true)
        let samples = try #require(object["observations"] as? [[String: Any]])
        #expect(samples.map { $0["metric"] as? String } == ["blood_pressure_systolic", "blood_pressure_diastolic", "blood_pressure_mean", "pulse_rate_non_invasive"])
        #expect(samples.map { $0["mdc_code"] as? Int } == [150_021, 150_022, 150_023, 149_546])
        #expect((samples[0]["value"] as? [String: Any])?["status"] as? String == "number")
        #expect(samples[0]["reported_unit"] as? String == "mm[Hg]" && samples[0]["canonical_unit"] as? String == "mm[Hg]")
        #expect(samples[0]["device_supplied_time"] as? Bool == true && samples[0]["user_index"] as? Int == 1)
        #expect(samples[0]["intermediate"] as? Bool == false)
    }

    @Test("refused bytes: valid false with the reason naming the field")
    func refused() throws {
        let report = HealthDecodeReport.make(target: .characteristic(.bloodPressureMeasurement), bytes: [0x03, 2, 3, 4, 5, 6, 7])
        #expect(!report.valid)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try report.json().utf8)) as? [String: Any])
        #expect(object["valid"] as? Bool == false)
        #expect((object["reason"] as? String)?.contains("time stamp") == true)
        #expect((object["error"] as? [String: Any])?["offset"] as? Int == 7)
        #expect(report.text().contains("refused: Blood Pressure Measurement: truncated time stamp at offset 7"))
        let shortNumber = HealthDecodeReport.make(target: .sfloat, bytes: [0xFF])
        #expect(!shortNumber.valid && shortNumber.reason == "sfloat takes exactly 2 bytes, not 1")
    }

    @Test("sfloat and float: special values are statuses")
    func bareNumbers() throws {
        let nan = HealthDecodeReport.make(target: .sfloat, bytes: [0xFF, 0x07])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try nan.json().utf8)) as? [String: Any])
        #expect((object["fields"] as? [String: Any])?["status"] as? String == "nan")
        #expect((object["fields"] as? [String: Any])?["value"] == nil)
        let temperature = HealthDecodeReport.make(target: .float, bytes: [0xB0, 0x0E, 0x00, 0xFE])
        #expect(temperature.text().contains("value  37.60"))
    }

    @Test("human output lists fields and a sample table, intermediates marked")
    func humanOutput() throws {
        let report = HealthDecodeReport.make(target: .characteristic(.intermediateCuffPressure), bytes: [0x00, 0xD7, 0xF0, 0xFF, 0x07, 0xFF, 0x07])
        let text = report.text()
        #expect(text.hasPrefix("Intermediate Cuff Pressure (0x2A36), 7 bytes, parser version 1"))
        #expect(text.contains("systolic.value  21.5"))
        #expect(text.contains("intermediate: never stored"))
    }

    @Test("the built tether: exit 0 for a valid value, 1 with valid false for refused bytes, 2 for a bad argument")
    func builtBinary() async throws {
        let good = try await TetherProcess.run(["health", "decode", "--characteristic", "2A37", "1E 55 32 00 21 00", "--json"])
        #expect(good.status == 0)
        #expect(good.standardOutput.contains("\"heart_rate\" : 85"))
        let refused = try await TetherProcess.run(["health", "decode", "--characteristic", "0x2AA7", "08 00 0C 10 06 00 58 6F", "--json"])
        #expect(refused.status == 1)
        #expect(refused.standardOutput.contains("\"valid\" : false"))
        #expect(refused.standardOutput.contains("crc_mismatch"))
        let usage = try await TetherProcess.run(["health", "decode", "--characteristic", "2A99", "00"])
        #expect(usage.status == 2)
    }
}
