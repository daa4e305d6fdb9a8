import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting
import TetherTestSupport

/// The FHIR export end to end: samples uploaded to a real server, exported by `tether-server health export` and by
/// `GET /v1/health/export`, and the bundle checked by an independent FHIR library, PyPI fhir.resources 8.3.0's R4B
/// models (Tests/TetherServerTests/fhir_validate.py, venv by scripts/setup/fhir-venv.sh). Required in CI
/// (TETHER_REQUIRE_FHIR=1, scripts/test.sh): then a missing python3 or venv fails rather than skips.
@Suite("FHIR export: validated by fhir.resources")
struct FHIRExportValidationTests {
    static var required: Bool { ProcessInfo.processInfo.environment["TETHER_REQUIRE_FHIR"] == "1" }
    static var enabled: Bool { required || (PinnedPythonTools.python != nil && ProcessInfo.processInfo.environment["TETHER_SKIP_FHIR"] == nil) }

    struct Summary: Decodable {
        struct Observation: Decodable, Equatable {
            var identifier: String
            var status: String
            var category: [String]
            var codes: [String]
            var effective: String?
            var value: String?
            var unit: String?
            var absent: String?
            var device: String
            var gateway: String
        }

        struct Device: Decodable, Equatable {
            var identifier: String
            var manufacturer: String?
            var model: String?
            var serial: String?
        }

        var observations: [Observation]
        var devices: [Device]
    }

    /// Runs fhir_validate.py on `bundle`; fails the test with its message when the library rejects it.
    static func validate(_ bundle: String, in directory: String) async throws -> Summary {
        let python = try await PinnedPythonTools.tool("fhir-venv.sh")
        let file = directory + "/bundle.json"
        try Data(bundle.utf8).write(to: URL(fileURLWithPath: file))
        let script = PinnedPythonTools.repositoryRoot.appendingPathComponent("Tests/TetherServerTests/fhir_validate.py").path
        let run = try await ChildProcess.run(python, [script, file], timeout: .seconds(120))
        try #require(run.status == 0, "fhir.resources rejects the bundle: \(run.standardError)")
        return try JSONDecoder().decode(Summary.self, from: Data(run.standardOutput.utf8))
    }

    /// Systolic 0.1 (a value no binary float holds), a long mantissa, a NaN, a glucose reading, a deleted sample and
    /// the correction that replaced it, from two devices.
    static func uploads() -> (samples: [HealthSampleUpload], deleted: HealthSampleUpload) {
        var tiny = HealthFixtures.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d001", mantissa: 1, exponent: -1, value: "0.1", effectiveAt: 1_793_520_000_123_456_789)
        tiny.dedupKey = "tiny"
        var long = HealthFixtures.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d001", mantissa: 1_234_567_890_123_456_789, exponent: -9, value: "1234567890.123456789", effectiveAt: 1_793_520_001_000_000_000)
        long.dedupKey = "long"
        var nan = HealthFixtures.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d001", effectiveAt: 1_793_520_002_000_000_000)
        nan.dedupKey = "nan"
        nan.valueStatus = "nan"
        nan.reported = .init(mantissa: nil, exponent: nil, unit: "mm[Hg]")
        nan.canonical = .init(value: nil, unit: "mm[Hg]")
        var glucose = HealthFixtures.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d002", mantissa: 95, exponent: 0, value: "95", effectiveAt: 1_793_520_003_000_000_000)
        glucose.dedupKey = "glucose"
        glucose.metricCode = 160184
        glucose.characteristic = "00002a18-0000-1000-8000-00805f9b34fb"
        glucose.reported.unit = "mg/dL"
        glucose.canonical.unit = "mg/dL"
        glucose.device = HealthDeviceReference(uid: "0190a5b2-0000-7000-8000-00000000d002", manufacturer: nil, model: "G-1", serial: nil)
        var deleted = HealthFixtures.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d001", value: "120", effectiveAt: 1_793_520_004_000_000_000)
        deleted.dedupKey = "deleted"
        var correction = HealthFixtures.sample(deviceUID: "0190a5b2-0000-7000-8000-00000000d001", value: "121", effectiveAt: 1_793_520_004_000_000_000)
        correction.dedupKey = "correction"
        correction.replaces = deleted.uid
        correction.rawBytes = nil
        correction.lane = "change"
        return ([tiny, long, nan, glucose, deleted, correction], deleted)
    }

    @Test(.enabled(if: enabled), .timeLimit(.minutes(10)))
    func exportedBundleValidates() async throws {
        try #require(PinnedPythonTools.python != nil, "the FHIR check is required (TETHER_REQUIRE_FHIR=1) but there is no python3")
        let binary = try BuiltProducts.require("tether-server", override: "TETHER_SERVER_BINARY")
        try await withServer(.sqlite) { server in
            guard case .sqlite(let path) = server.configuration.storage else { Issue.record("not SQLite"); return }
            let directory = try makeTemporaryDirectory("fhir-export-test")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let api = try await server.api(tenant: "tenant-a")
            let (samples, deleted) = Self.uploads()
            #expect(try await api.uploaded(samples).allSatisfy { $0.status == .applied })
            let tombstone = HealthFixtures.deletion(of: deleted.uid, reason: "correction", requestedBy: "technician", replacement: samples[5].uid)
            #expect(try await api.deleted([tombstone]).map(\.status) == [.applied])
            #expect(try await (try await server.api(tenant: "tenant-b")).uploaded([HealthFixtures.sample()]).map(\.status) == [.applied])

            let output = directory + "/export.json"
            let run = try await ChildProcess.run(binary, ["health", "export", "--db", path, "--tenant", "tenant-a", "--output", output])
            #expect(run.status == 0, "\(run.standardError)")
            let summary = try await Self.validate(try String(contentsOfFile: output, encoding: .utf8), in: directory)

            let device1 = "urn:tether:health-device|0190a5b2-0000-7000-8000-00000000d001"
            let device2 = "urn:tether:health-device|0190a5b2-0000-7000-8000-00000000d002"
            let mdc = "urn:iso:std:iso:11073:10101"
            func observation(_ sample: HealthSampleUpload, status: String = "final", codes: [String], vital: Bool, effective: String, value: String?, absent: String? = nil, device: String = device1) -> Summary.Observation {
                Summary.Observation(
                    identifier: "urn:tether:health-sample|\(sample.uid)", status: status, category: vital ? ["vital-signs"] : [], codes: codes,
                    effective: effective, value: value, unit: value == nil ? nil : sample.canonical.unit, absent: absent, device: device,
                    gateway: "urn:tether:gateway|gw-1")
            }
            let systolic = ["\(mdc)|150021", "http://loinc.org|8480-6"]
            #expect(
                summary.observations == [
                    observation(samples[0], codes: systolic, vital: true, effective: "2026-11-01T08:00:00.123000+00:00", value: "0.1"),
                    observation(samples[1], codes: systolic, vital: true, effective: "2026-11-01T08:00:01+00:00", value: "1234567890.123456789"),
                    observation(samples[2], codes: systolic, vital: true, effective: "2026-11-01T08:00:02+00:00", value: nil, absent: "not-a-number"),
                    observation(samples[3], codes: ["\(mdc)|160184"], vital: false, effective: "2026-11-01T08:00:03+00:00", value: "95", device: device2),
                    observation(samples[5], status: "amended", codes: systolic, vital: true, effective: "2026-11-01T08:00:04+00:00", value: "121"),
                ])
            #expect(
                summary.devices == [
                    Summary.Device(identifier: device1, manufacturer: "Example", model: "BP-1", serial: "SN-7"),
                    Summary.Device(identifier: "urn:tether:gateway|gw-1", manufacturer: nil, model: nil, serial: nil),
                    Summary.Device(identifier: device2, manufacturer: nil, model: "G-1", serial: nil),
                ])

            // The endpoint: the same mapping, a page at a time, as application/fhir+json.
            let answer = try await api.send(.GET, "/v1/health/export?limit=3")
            #expect(answer.status == 200, "\(answer.text)")
            #expect(answer.headers["Content-Type"].first?.hasPrefix("application/fhir+json") == true)
            let firstPage = try await Self.validate(answer.text, in: directory)
            #expect(firstPage.observations.map(\.identifier) == summary.observations.prefix(3).map(\.identifier))
            let bundle = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
            let next = ((bundle?["link"] as? [[String: Any]])?.first?["url"]) as? String
            #expect(next == "/v1/health/export?since=\(samples[2].effectiveAt)&after=\(samples[2].uid)&limit=3")
            let rest = try await api.send(.GET, next ?? "/")
            #expect(rest.status == 200, "\(rest.text)")
            let secondPage = try await Self.validate(rest.text, in: directory)
            #expect(secondPage.observations.map(\.identifier) == summary.observations.suffix(2).map(\.identifier))
            #expect(!rest.text.contains("\"link\""), "the last page has no next link")
            #expect(try await api.send(.GET, "/v1/health/export?limit=0").status == 400)
            #expect(try await api.send(.GET, "/v1/health/export?since=x").status == 400)
            #expect(try await api.send(.GET, "/v1/health/export?since=0&after=not-a-uid").status == 400)
            let ignored = try await api.send(.GET, "/v1/health/export?after=\(samples[4].uid)&limit=1")
            #expect(try await Self.validate(ignored.text, in: directory).observations.map(\.identifier) == [summary.observations[0].identifier], "after without since is ignored")
        }
    }

    @Test("the command parses")
    func parses() throws {
        let command = try ServerCommand.parseAsRoot(["health", "export", "--db", "a", "--tenant", "t", "--since", "5", "--until", "9", "--output", "f"])
        let export = try #require(command as? ServerCommand.Health.Export)
        #expect(export.since == 5 && export.until == 9 && export.output == "f")
        #expect(throws: (any Error).self) { try ServerCommand.parseAsRoot(["health", "export", "--db", "a"]) }
    }
}
