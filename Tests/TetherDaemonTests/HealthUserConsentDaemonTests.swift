import BlueZSimulator
import DBus
import Foundation
import HealthDeviceModel
import Testing
import TetherTestSupport

/// Multi-user scale consent through a real tetherd (docs/design/health.md, "Multi-user scales: User Data Service
/// consent"): the consent codes file as shipped (`[health] consent_codes_file`, 0600), a wrong code for user 2,
/// and what a technician sees: only user 1's readings, the log saying user 2 was not authorized, and no code
/// anywhere in the log, even at debug level.
@Suite(.serialized) struct HealthUserConsentDaemonTests {
    static let device = "C0:54:45:00:00:01"

    @Test(.timeLimit(.minutes(4)))
    func aWrongCodeIsLoggedAsNotAuthorizedAndNoCodeIsEverLogged() async throws {
        var scale = HealthDeviceSettings(kind: .weightScale)
        scale.storedRecords = 4
        scale.users = [HealthUser(index: 1, consentCode: 9137), HealthUser(index: 2, consentCode: 6052)]
        try await HealthControlTests.with([scale]) { bed in
            let codes = try bed.directory.write("consent-codes", """
                # the family scale
                \(Self.device) 1 9137
                \(Self.device) 2 6053
                """, mode: 0o600)
            let daemon = try await bed.startDaemon(extra: """
                [health]
                consent_codes_file = "\(codes)"
                """, logLevel: "debug")
            _ = try await bed.pair(Self.device)
            try await waitUntil("user 2 reported not authorized; log:\n\(daemon.logText)", seconds: 90, every: .milliseconds(100)) {
                daemon.logText.contains("user 2 not authorized")
            }
            try await waitUntil("user 1's two weights", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await HealthControlTests.samples(bed, Self.device).count { $0["metric"]?.stringValue == "body_mass" } == 2
            }
            try await Task.sleep(for: .seconds(1))  // what user 2's weights would need to arrive
            let weights = try await HealthControlTests.samples(bed, Self.device).filter { $0["metric"]?.stringValue == "body_mass" }
            #expect(weights.count == 2)
            #expect(weights.allSatisfy { $0["user_index"]?.uint32Value == 1 }, "\(weights)")
            let log = daemon.logText
            #expect(log.contains("user 1 consented"), "\(log)")
            // No code as a number in the log (nor the Consent bytes' code, LE: 0x23B1 = 9137 is B1 23).
            let numbers = Set(log.split(whereSeparator: { !$0.isNumber }).map(String.init))
            for code in ["9137", "6052", "6053"] { #expect(!numbers.contains(code), "code \(code) in the log") }
            #expect(!log.lowercased().contains("b1 23") && !log.lowercased().contains("b123"))
            try await bed.stopDaemon()
        }
    }
}
