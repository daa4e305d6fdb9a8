import Foundation
import TetherServer

/// The two storage backends, for suites that run the same tests against both.
public enum ServerBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// Fresh, empty storage of this kind: a new SQLite file, or a new database in the process's PostgreSQL
    /// cluster. Throws `PostgresCluster.Unavailable` when PostgreSQL is not installed, `PostgresCluster.StartFailed`
    /// when it is but would not start (a failure, never a skip).
    public func freshStorage(in directory: String) async throws -> ServerStorage {
        switch self {
        case .sqlite:
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return .sqlite(path: directory + "/server-\(UUID().uuidString.prefix(8)).sqlite")
        case .postgres:
            let cluster = try await PostgresCluster.shared()
            let name = "tether_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
            return .postgres(cluster.configuration(database: try await cluster.createDatabase(name)))
        }
    }

    /// Whether a PostgreSQL that is not installed must fail the run (scripts/test.sh sets `TETHER_REQUIRE_POSTGRES=1`)
    /// rather than skip.
    public static var postgresRequired: Bool { ProcessInfo.processInfo.environment["TETHER_REQUIRE_POSTGRES"] == "1" }
}

/// A directory under the system temporary directory for one test.
public func makeTemporaryDirectory(_ label: String = "tether") throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
