import Foundation

// tether-store-bench [--events N] [--raw-events N] [--rate R] [--seconds S] [--dir PATH] [--only raw|ingest|paced|health]
//                    [--wal-autocheckpoint PAGES] [--background-checkpoints on|off]
//                    [--health-samples N] [--health-batch B] [--health-streams S]
// Build in release: swift run -c release tether-store-bench
@main
struct Entrypoint {
    static func main() throws {
        try StoreBenchmark(arguments: Array(CommandLine.arguments.dropFirst())).run()
    }
}
