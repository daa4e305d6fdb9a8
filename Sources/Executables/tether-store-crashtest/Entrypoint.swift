import Foundation
import TetherStoreSimulation

// tether-store-crashtest gateway --db PATH        the gateway child (driven over stdin/stdout)
// tether-store-crashtest soak --db PATH [--kills N] [--seed S] [--devices D]
//                                                 the driver: plays the devices, kills and restarts the child
// tether-store-crashtest health-gateway --db PATH [--streams N] [--records-per-batch R] [--records-per-epoch E] [--pause-at K]
//                                                 the health ingest child (HealthCrashGateway)
// tether-store-crashtest health-soak --db PATH [--kills N] [--seed S]
//                                                 its driver: kills it, between samples and cursor every other life
@main
struct Entrypoint {
    static func main() async {
        let exitCode = await CrashTestCommand.run(arguments: Array(CommandLine.arguments.dropFirst()))
        exit(exitCode)
    }
}
