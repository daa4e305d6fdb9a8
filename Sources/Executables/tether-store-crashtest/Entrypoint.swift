import Foundation
import TetherStoreSimulation

// tether-store-crashtest gateway --db PATH        the gateway child (driven over stdin/stdout)
// tether-store-crashtest soak --db PATH [--kills N] [--seed S] [--devices D]
//                                                 the driver: plays the devices, kills and restarts the child
@main
struct Entrypoint {
    static func main() async {
        let exitCode = await CrashTestCommand.run(arguments: Array(CommandLine.arguments.dropFirst()))
        exit(exitCode)
    }
}
