import Foundation
import Logging
import ServiceLifecycle
import SyncContract
import TetherServer

/// A real tether-server in this process on a loopback port, for tests and the benchmark: started with a store,
/// stopped gracefully, restartable on the same port over the same data.
public final class TestServer: Sendable {
    public let port: Int
    public let store: any ServerStore
    public let faults: FaultInjector
    public let configuration: ServerConfiguration
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    public var baseURL: String { "\(configuration.tls == nil ? "http" : "https")://127.0.0.1:\(port)" }

    /// Starts a server over `storage` (or an existing `store`) and returns once it accepts connections.
    public static func start(
        storage: ServerStorage, store existing: (any ServerStore)? = nil, port: Int = 0, faults: FaultInjector = FaultInjector(),
        logger: Logger = TestServer.quietLogger, configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        var configuration = ServerConfiguration(storage: storage)
        configuration.port = port
        configuration.faults = faults
        configure(&configuration)
        let store = try existing ?? storage.makeStore(logger: logger)
        let (ports, announce) = AsyncThrowingStream.makeStream(of: Int.self)
        let app = TetherServerApp(configuration: configuration, store: store, logger: logger) { port in
            announce.yield(port)
            announce.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        // Owned by the TestServer and awaited by stop().
        let task = Task {
            do {
                try await group.run()
                announce.finish(throwing: ServerStopped())
            } catch {
                announce.finish(throwing: error)
                throw error
            }
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = try await iterator.next() else { throw ServerStopped() }
        return TestServer(port: bound, store: store, faults: faults, configuration: configuration, group: group, task: task)
    }

    private init(port: Int, store: any ServerStore, faults: FaultInjector, configuration: ServerConfiguration, group: ServiceGroup, task: Task<Void, any Error>) {
        self.port = port
        self.store = store
        self.faults = faults
        self.configuration = configuration
        self.group = group
        self.task = task
    }

    /// Stops accepting, finishes requests in flight, closes the store's connections.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// A new token for a gateway of `tenant`, in full.
    public func token(tenant: String, gateway: String) async throws -> String {
        try await TokenAdministration.issue(store: store, tenant: tenant, gateway: gateway).reveal
    }

    public struct ServerStopped: Error {}

    public static let quietLogger = Logger(label: "tether-server-test") { _ in SwiftLogNoOpLogHandler() }
}
