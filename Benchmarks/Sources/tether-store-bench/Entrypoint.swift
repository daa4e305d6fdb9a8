import Foundation

// tether-store-bench [--events N] [--raw-events N] [--rate R] [--seconds S] [--dir PATH] [--only raw|ingest|paced]
//                    [--wal-autocheckpoint PAGES] [--background-checkpoints on|off]
// Build in release: swift run -c release tether-store-bench
@main
struct Entrypoint {
    static func main() throws {
        try StoreBenchmark(arguments: Array(CommandLine.arguments.dropFirst())).run()
    }
}
