import Foundation
import Testing
import TetherStoreSimulation
import TetherTestSupport

@Suite("Health crash: a gateway SIGKILLed during health ingest leaves every batch whole or absent")
struct HealthCrashTests {
    @Test("every batch reported committed is there in full, samples and cursor; a kill between them leaves neither", .timeLimit(.minutes(5)))
    func killedDuringIngest() async throws {
        let executable = try BuiltProducts.require("tether-store-crashtest", override: "TETHER_CRASHTEST_BINARY")
        let directory = try TemporaryDirectory()
        let environment = ProcessInfo.processInfo.environment
        var configuration = HealthCrashDriver.Configuration(
            executable: executable, databasePath: directory.file("health-crash.sqlite"), logPath: directory.file("health-gateway.log"))
        configuration.kills = environment["TETHER_HEALTH_CRASH_KILLS"].flatMap(Int.init) ?? 20
        configuration.seed = environment["TETHER_CRASH_SEED"].flatMap(UInt64.init) ?? 20_261_124
        // Minutes of blocking waits on child processes: on a thread of its own, not the tests' shared pool.
        let report = try await onOwnThread { [configuration] in HealthCrashDriver.run(configuration) }
        let log = (try? String(contentsOfFile: configuration.logPath, encoding: .utf8)) ?? ""
        #expect(report.violations.isEmpty, "\(report.violations.prefix(10))\n\(log.suffix(2000))")
        #expect(report.kills == configuration.kills)
        #expect(report.pausedKills == configuration.kills / 2, "every other life ends between samples and cursor")
        #expect(report.verifications == configuration.kills + 1)
        #expect(report.batchesReported > configuration.kills)
        #expect(report.duplicatesReported > 0)
        #expect(report.epochsStarted > configuration.plan.streams, "some stream started a new epoch")
        #expect(report.samplesStored > 0)
        print("health crash test: \(report)")
    }
}
