import Foundation
import Testing
import TetherStoreSimulation
import TetherTestSupport

@Suite("Crash: a gateway SIGKILLed at random moments loses nothing and stores nothing twice")
struct CrashTests {
    @Test("every event the firmware saw ACKed is stored exactly once; the rest arrive after the last kill", .timeLimit(.minutes(10)))
    func killedAtRandomMoments() async throws {
        let gatewayExecutable = try BuiltProducts.require("tether-store-crashtest", override: "TETHER_CRASHTEST_BINARY")
        let directory = try TemporaryDirectory()
        let environment = ProcessInfo.processInfo.environment
        var configuration = CrashDriver.Configuration(
            gatewayExecutable: gatewayExecutable, databasePath: directory.file("crash.sqlite"), logPath: directory.file("gateway.log"))
        configuration.kills = environment["TETHER_CRASH_KILLS"].flatMap(Int.init) ?? 50
        configuration.seed = environment["TETHER_CRASH_SEED"].flatMap(UInt64.init) ?? 20_261_101
        // The settle phase ends as soon as the devices are empty; the bound only stops a gateway that never takes
        // the rest. 30 s was too tight when the whole suite (or other builds) loads the 2 cores: delivery slowed,
        // nothing was lost (measured: 1,373 events still queued on a device after 30 s with 4 CPU burners).
        // 150 s was missed too (219 events still queued) with a soak, a helper's build and the fresh-clone CI run
        // sharing the cores at load 7.5: 300 s.
        configuration.settleTimeout = .seconds(300)
        // Minutes of blocking waits on child processes: on a thread of its own, not the tests' shared pool.
        let report = try await onOwnThread { [configuration] in CrashDriver.run(configuration) }
        let log = (try? String(contentsOfFile: configuration.logPath, encoding: .utf8)) ?? ""
        #expect(report.violations.isEmpty, "\(report.violations.prefix(10))\n\(log.suffix(2000))")
        #expect(report.kills >= configuration.kills)
        #expect(report.verifications == report.kills + 1)
        #expect(report.releasedBeforeLastKill > 0)
        #expect(report.createdEvents > 0 && report.storedEvents == report.createdEvents && report.releasedEvents == report.createdEvents)
        #expect(report.anchors > 0)
        print("crash test: \(report)")
    }
}
