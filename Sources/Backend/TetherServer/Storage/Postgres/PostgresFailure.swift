import PostgresNIO

/// Which PostgreSQL failures are the server's condition rather than the request's fault, so that they are answered as
/// 503 (a gateway sends the commands again later, untouched) and not as 500 (which a gateway counts against every
/// command and dead-letters it after `OutboxPolicy.maximumAttempts`).
///
/// By SQLSTATE (PostgreSQL documentation, Appendix A "PostgreSQL Error Codes"):
/// - 53100 `disk_full` (class 53, Insufficient Resources): the statement failed to extend a file; PostgreSQL rolled
///   the transaction back, nothing was applied → `StorageFull`.
/// - class 57 (Operator Intervention: 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now) and
///   class 08 (Connection Exception), and a connection the server closed or lost (a backend that PANICked takes
///   every connection with it while the postmaster restarts) → `StorageUnavailable`. If the connection died during
///   COMMIT the transaction may have been applied: a push sent again is then answered `duplicate`, so the retry a
///   503 asks for is safe.
enum PostgresFailure {
    static func classified(_ error: any Error) -> any Error {
        let underlying = (error as? PostgresTransactionError).flatMap { $0.closureError ?? $0.commitError ?? $0.beginError } ?? error
        guard let failure = underlying as? PSQLError else { return error }
        if failure.code == .server, let state = failure.serverInfo?[.sqlState] {
            let message = failure.serverInfo?[.message] ?? ""
            if state == "53100" {
                return StorageFull(description: "PostgreSQL cannot extend its files (SQLSTATE 53100 disk_full): \(message)")
            }
            if state.hasPrefix("57") || state.hasPrefix("08") {
                return StorageUnavailable(description: "PostgreSQL is not serving (SQLSTATE \(state)): \(message)")
            }
            return error
        }
        switch failure.code {
        case .serverClosedConnection, .connectionError, .uncleanShutdown:
            return StorageUnavailable(description: "the connection to PostgreSQL failed (\(failure.code))")
        default:
            return error
        }
    }
}
