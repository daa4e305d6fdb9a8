/// Bounded waits: a test that waits for something that should happen fails, naming it, instead of hanging.

/// A bounded wait ran out.
public struct WaitTimeout: Error, CustomStringConvertible {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out waiting for \(what)" }
}

/// Waits until `condition` holds, checking it every `interval`, at most `seconds` (generous: the build machines
/// are shared), then throws `WaitTimeout` naming what was awaited. An error from `condition` ends the wait, unless
/// `retryingErrors` (for a condition that cannot be asked yet, such as a daemon not yet on the bus): then the
/// wait goes on and the timeout names the last error.
public func waitUntil(
    _ what: String, seconds: Double = 30, every interval: Duration = .milliseconds(20), retryingErrors: Bool = false,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var lastError: (any Error)?
    while true {
        do {
            if try await condition() { return }
        } catch {
            guard retryingErrors else { throw error }
            lastError = error
        }
        guard ContinuousClock.now < deadline else { break }
        try await Task.sleep(for: interval)
    }
    throw WaitTimeout(what: what + (lastError.map { " (last error: \($0))" } ?? ""))
}

/// Runs `body`, throwing `WaitTimeout` if it takes longer than `timeout` (a bounded wait on something that should
/// happen: a signal, a disconnection). `body` is cancelled then, and must end on cancellation: the wait returns
/// only when it has.
public func within<Result: Sendable>(
    _ timeout: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else { throw WaitTimeout(what: what) }
        return result
    }
}
