import ArgumentParser
import Foundation
import Logging

extension ServerCommand.Health {
    /// `tether-server health export --tenant T [--since NS] [--until NS] [--output FILE]`: the tenant's undeleted
    /// samples as one FHIR R4 transaction Bundle (`FHIRExport`), the same mapping as `GET /v1/health/export` but
    /// without its page limit.
    public struct Export: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Print a tenant's undeleted health samples as a FHIR R4 transaction Bundle (JSON).")
        @OptionGroup public var storage: StorageOptions
        @Option(help: "The tenant whose samples to export.") public var tenant: String
        @Option(help: "Only samples whose effective time is at or after this instant (nanoseconds since the Unix epoch).")
        public var since: Int64?
        @Option(help: "Only samples whose effective time is before this instant (nanoseconds since the Unix epoch).")
        public var until: Int64?
        @Option(help: "Write the bundle to this file instead of standard output.") public var output: String?

        public init() {}

        public func run() async throws {
            let tenant = tenant
            let query = HealthExportQuery(since: since, until: until, limit: Int.max)
            let selected = try await StoreAccess.with(try storage.storage(), logger: Logger(label: "tether-server")) { store in
                try await store.healthExportPage(tenant: tenant, query: query).rows
            }
            let json = FHIRExport.bundle(selected).serialized + "\n"
            if let output {
                try Data(json.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            } else {
                print(json, terminator: "")
            }
        }
    }
}
