import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// How a server runs: where it listens, what it stores in, whether it speaks TLS, its limits, and (tests only) the
/// faults it plays.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port; `TetherServerApp.run(onListening:)` reports the one bound.
    public var port = 8080
    public var storage: ServerStorage
    public var tls: TLSFiles?
    public var limits = ServerLimits()
    public var faults: FaultInjector?

    public init(storage: ServerStorage) {
        self.storage = storage
    }

    /// A PEM certificate chain and its PEM private key.
    public struct TLSFiles: Hashable, Sendable {
        public var certificatePath: String
        public var privateKeyPath: String

        public init(certificatePath: String, privateKeyPath: String) {
            self.certificatePath = certificatePath
            self.privateKeyPath = privateKeyPath
        }

        func serverConfiguration() throws -> TLSConfiguration {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: privateKeyPath, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            return configuration
        }
    }
}

/// Where the server keeps its data.
public enum ServerStorage: Sendable {
    /// One SQLite file, created on first use (the default: no setup).
    case sqlite(path: String)
    /// A PostgreSQL database; see `PostgresURL` for the URL forms.
    case postgres(PostgresClient.Configuration)

    public func makeStore(logger: Logger) throws -> any ServerStore {
        switch self {
        case .sqlite(let path): try SQLiteServerStore(path: path)
        case .postgres(let configuration): PostgresServerStore(configuration: configuration, logger: logger)
        }
    }
}

/// PostgreSQL connection URLs, as libpq writes them:
/// `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`, and
/// `postgres://user@/database?host=/socket/directory[&port=5432]` for a Unix socket (the directory holding
/// `.s.PGSQL.<port>`).
public enum PostgresURL {
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    public static func configuration(_ text: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: text), components.scheme == "postgres" || components.scheme == "postgresql" else {
            throw Invalid(description: "expected postgres://user[:password]@host[:port]/database")
        }
        guard let user = components.user, !user.isEmpty else { throw Invalid(description: "the URL names no user") }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !database.isEmpty else { throw Invalid(description: "the URL names no database") }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let port = components.port ?? query["port"].flatMap(Int.init) ?? 5432
        if let directory = query["host"], directory.hasPrefix("/") {
            return PostgresClient.Configuration(
                unixSocketPath: "\(directory)/.s.PGSQL.\(port)", username: user, password: components.password, database: database)
        }
        guard let host = components.host, !host.isEmpty else { throw Invalid(description: "the URL names no host") }
        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "prefer" {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case let mode: throw Invalid(description: "sslmode \(mode) is not one of disable, prefer, require")
        }
        return PostgresClient.Configuration(host: host, port: port, username: user, password: components.password, database: database, tls: tls)
    }
}
