import Logging
import PostgresNIO

/// Runs `body` with a migrated store outside the server (the CLI's token and operator commands): a PostgreSQL
/// store's pool runs for exactly as long as the body.
public enum StoreAccess {
    public static func with<T: Sendable>(_ storage: ServerStorage, logger: Logger, _ body: @Sendable @escaping (any ServerStore) async throws -> T) async throws -> T {
        let store = try storage.makeStore(logger: logger)
        guard let postgres = store as? PostgresServerStore else {
            try await store.migrate()
            return try await body(store)
        }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await postgres.client.run()
                return nil
            }
            group.addTask {
                try await store.migrate()
                return try await body(store)
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw CancellationError()
        }
    }
}
