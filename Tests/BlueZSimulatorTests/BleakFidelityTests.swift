import Foundation
import Testing
import TetherTestSupport

/// Runs scripts/ci/bleak-fidelity.sh: a pinned bleak (a third-party BlueZ client) against tether-sim on a private
/// bus. Needs python3 with venv and, on the first run, PyPI. Skipped without python3 or with TETHER_SKIP_BLEAK=1,
/// unless TETHER_REQUIRE_BLEAK=1 (scripts/test.sh sets it): then it always runs, and no python3, a venv that cannot
/// be made or a skip request fails it.
@Suite struct BleakFidelityTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    } ?? ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").map { "\($0)/python3" }.first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let required = ProcessInfo.processInfo.environment["TETHER_REQUIRE_BLEAK"] == "1"
    static let skipRequested = ProcessInfo.processInfo.environment["TETHER_SKIP_BLEAK"] != nil
    static let enabled = required || (python != nil && !skipRequested)

    @Test(.enabled(if: enabled), .timeLimit(.minutes(5)))
    func bleakDrivesTheSimulator() async throws {
        #expect(!(Self.required && Self.skipRequested), "TETHER_REQUIRE_BLEAK=1 and TETHER_SKIP_BLEAK are both set")
        try #require(Self.python != nil, "bleak's fidelity test is required (TETHER_REQUIRE_BLEAK=1) but there is no python3")
        // tether-sim, built beside the test bundle by `swift test`.
        var environment = ChildProcess.environment()
        if let simulator = BuiltProducts.path("tether-sim") {
            environment["TETHER_SIM"] = simulator
        }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("bleak-fidelity-\(getpid()).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let process = try ChildProcess(
            "/bin/bash", [Self.root.appendingPathComponent("scripts/ci/bleak-fidelity.sh").path], environment: environment,
            output: .file(log.path))
        defer { process.kill() }
        let status = try await process.wait(timeout: .seconds(280))
        let text = try String(contentsOf: log, encoding: .utf8)
        #expect(status == 0, "\(text)")
        for operation in [
            "scan finds Tether-0001", "connect", "service discovery: Tether service", "mtu via AcquireWrite",
            "read (Device Information serial)", "write with response + read back",
            "CCCD write refused with NotPermitted", "notifications via StartNotify (DEVICE_INFO)",
            "notifications via AcquireNotify (DEVICE_INFO)", "pair (just works)",
            "pair Tether-0002 via agent RequestPasskey", "pair Tether-0003 via agent RequestConfirmation",
            "disconnect",
        ] {
            #expect(text.contains("PASS \(operation)\n"), "missing: \(operation)")
        }
    }

    /// The standard health devices (health-devices.json) through bleak: a glucose meter's RACP report of every
    /// stored record with its contexts and the success response, a cuff's stored and live indications, a strap's
    /// notifications (bleak_health_client.py).
    @Test(.enabled(if: enabled), .timeLimit(.minutes(5)))
    func bleakReadsTheHealthDevices() async throws {
        try #require(Self.python != nil, "bleak's fidelity test is required (TETHER_REQUIRE_BLEAK=1) but there is no python3")
        var environment = ChildProcess.environment()
        if let simulator = BuiltProducts.path("tether-sim") {
            environment["TETHER_SIM"] = simulator
        }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("bleak-health-\(getpid()).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let process = try ChildProcess(
            "/bin/bash", [Self.root.appendingPathComponent("scripts/ci/bleak-fidelity.sh").path, "--health"],
            environment: environment, output: .file(log.path))
        defer { process.kill() }
        let status = try await process.wait(timeout: .seconds(280))
        let text = try String(contentsOf: log, encoding: .utf8)
        #expect(status == 0, "\(text)")
        for operation in [
            "glucose: CCCD refused before pairing with NotPermitted", "glucose: every stored record, uint16 sequence wrapping",
            "glucose: RACP success 06 00 01 01", "glucose: contexts match announced sequence numbers",
            "cuff: 3 stored readings indicated on connect",
            "cuff: reading 2 failed (NaN in all three pressures), 1 and 3 are numbers",
            "cuff: intermediate cuff pressures (notify) then the measurement (indicate)",
            "heart rate: notifications via AcquireNotify, 60-100 bpm",
        ] {
            #expect(text.contains("PASS \(operation)\n"), "missing: \(operation)")
        }
    }
}
