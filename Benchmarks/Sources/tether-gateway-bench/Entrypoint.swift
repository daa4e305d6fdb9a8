import GatewayBenchmark

@main
enum Entrypoint {
    static func main() async throws {
        try await GatewayBenchmark.main(arguments: Array(CommandLine.arguments.dropFirst()))
    }
}
