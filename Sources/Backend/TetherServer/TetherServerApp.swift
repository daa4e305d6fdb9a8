import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// The reference sync backend as a Service: the Hummingbird application over a store, with the store's own
/// services (the PostgreSQL pool) and its migration before the first request.
public struct TetherServerApp: Service {
    public let configuration: ServerConfiguration
    public let store: any ServerStore
    private let logger: Logger
    private let onListening: @Sendable (Int) async -> Void

    /// - Parameter onListening: called with the bound port once the server accepts connections.
    public init(configuration: ServerConfiguration, store: any ServerStore, logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.onListening = onListening
    }

    public func run() async throws {
        let router = SyncRoutes.router(store: store, limits: configuration.limits, faults: configuration.faults)
        let server: HTTPServerBuilder = try configuration.tls.map { try .tls(.http1(), tlsConfiguration: try $0.serverConfiguration()) } ?? .http1()
        let onListening = onListening
        let logger = logger
        var app = Application(
            router: router, server: server,
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port), serverName: "tether-server"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.info("tether-server listening", metadata: ["port": "\(port)"])
                await onListening(port)
            },
            logger: logger)
        if let postgres = store as? PostgresServerStore { app.addServices(postgres.client) }
        let store = store
        app.beforeServerStarts { try await store.migrate() }
        try await app.run()
    }
}

/// Issuing and revoking gateway tokens: the one place a token exists in full, returned to be shown once.
public enum TokenAdministration {
    public static func issue(store: any ServerStore, tenant: String, gateway: String, at date: Date = Date()) async throws -> GatewayToken {
        guard (1...128).contains(tenant.utf8.count), (1...128).contains(gateway.utf8.count) else {
            throw TokenNameInvalid(description: "tenant and gateway names are 1 to 128 bytes")
        }
        let token = GatewayToken.generate()
        try await store.insertToken(TokenRecord(id: token.id, secretHash: token.secretHash, tenant: tenant, gateway: gateway, createdAt: date))
        return token
    }

    public struct TokenNameInvalid: Error, CustomStringConvertible {
        public var description: String
    }
}
