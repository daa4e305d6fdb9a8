import Foundation
import TetherStore

/// The crash-test executable's two roles, parsed from plain arguments (it is a test tool, not a CLI).
public enum CrashTestCommand {
    public static func run(arguments: [String]) async -> Int32 {
        guard let role = arguments.first else { return usage() }
        var options: [String: String] = [:]
        var index = 1
        while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
            options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        guard index == arguments.count, let databasePath = options["db"] else { return usage() }
        switch role {
        case "gateway":
            do {
                try await CrashGateway.run(databasePath: databasePath)
                return 0
            } catch {
                FileHandle.standardError.write(Data("gateway: \(error)\n".utf8))
                return 1
            }
        case "soak":
            var configuration = CrashDriver.Configuration(
                gatewayExecutable: selfPath(), databasePath: databasePath, logPath: databasePath + ".gateway.log")
            if let kills = options["kills"].flatMap(Int.init) { configuration.kills = kills }
            if let seed = options["seed"].flatMap(UInt64.init) { configuration.seed = seed }
            if let devices = options["devices"].flatMap(Int.init) { configuration.devices = devices }
            configuration.progress = { print($0) }
            let report = CrashDriver.run(configuration)
            print(report)
            for violation in report.violations.prefix(20) { print("VIOLATION: \(violation)") }
            return report.violations.isEmpty ? 0 : 1
        case "health-gateway":
            var plan = HealthCrashPlan()
            if let streams = options["streams"].flatMap(Int.init) { plan.streams = streams }
            if let records = options["records-per-batch"].flatMap(Int64.init) { plan.recordsPerBatch = records }
            if let records = options["records-per-epoch"].flatMap(Int64.init) { plan.recordsPerEpoch = records }
            do {
                try await HealthCrashGateway.run(databasePath: databasePath, plan: plan, pauseAt: options["pause-at"].flatMap(Int.init))
                return 0
            } catch {
                FileHandle.standardError.write(Data("health-gateway: \(error)\n".utf8))
                return 1
            }
        case "health-soak":
            var configuration = HealthCrashDriver.Configuration(executable: selfPath(), databasePath: databasePath, logPath: databasePath + ".gateway.log")
            if let kills = options["kills"].flatMap(Int.init) { configuration.kills = kills }
            if let seed = options["seed"].flatMap(UInt64.init) { configuration.seed = seed }
            configuration.progress = { print($0) }
            let report = HealthCrashDriver.run(configuration)
            print(report)
            for violation in report.violations.prefix(20) { print("VIOLATION: \(violation)") }
            return report.violations.isEmpty ? 0 : 1
        default:
            return usage()
        }
    }

    private static func usage() -> Int32 {
        FileHandle.standardError.write(Data("""
            usage: tether-store-crashtest gateway --db PATH | soak --db PATH [--kills N] [--seed S] [--devices D]
                 | health-gateway --db PATH [--streams N] [--records-per-batch R] [--records-per-epoch E] [--pause-at K]
                 | health-soak --db PATH [--kills N] [--seed S]

            """.utf8))
        return 2
    }

    /// This executable, to spawn as the gateway child.
    private static func selfPath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
