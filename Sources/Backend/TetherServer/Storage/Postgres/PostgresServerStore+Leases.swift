import Logging
import PostgresNIO
import Synchronization

/// Every use of the pool goes through these two: the wait for a connection is bounded, and PostgreSQL's failures are
/// classified (PostgresFailure).
///
/// Why bounded: postgres-nio's pool has no lease timeout. With PostgreSQL down it keeps trying to connect and a
/// request waits for a connection for as long as the outage lasts, holding the gateway's push (measured: a push
/// outlived the test client's 60 s deadline). Answered 503 after `connectionWait` instead, the gateway keeps its
/// commands and comes back after Retry-After. Only the wait for a connection is bounded, never the work done on one.
extension PostgresServerStore {
    /// How long a request waits for a pooled connection before it is answered 503.
    static let connectionWait: Duration = .seconds(5)

    /// `client.withTransaction` with a bounded wait for its connection.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let (client, logger) = (client, logger)
        return try await Self.bounded { leased in
            try await client.withTransaction(logger: logger) { connection in
                leased.set()
                return try await body(connection)
            }
        }
    }

    /// `client.withConnection` with a bounded wait for the connection.
    func connection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let client = client
        return try await Self.bounded { leased in
            try await client.withConnection { connection in
                leased.set()
                return try await body(connection)
            }
        }
    }

    private static func bounded<T: Sendable>(_ operation: @escaping @Sendable (LeaseFlag) async throws -> T) async throws -> T {
        let leased = LeaseFlag()
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await operation(leased) }
                group.addTask {
                    try await Task.sleep(for: connectionWait)
                    guard leased.isSet else {
                        throw StorageUnavailable(description: "no connection to PostgreSQL within \(connectionWait)")
                    }
                    return nil
                }
                while let result = try await group.next() {
                    if let result {
                        group.cancelAll()
                        return result
                    }
                }
                throw CancellationError()
            }
        } catch {
            throw PostgresFailure.classified(error)
        }
    }
}

/// Set once the operation holds its connection.
private final class LeaseFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
