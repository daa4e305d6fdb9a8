import Foundation

/// Runs blocking `work` (a child process waited for synchronously, a long CPU-bound loop) on a thread of its own and
/// returns its result.
///
/// Why: Swift Testing runs every test on Swift's concurrency pool, which on Linux has one thread per core — two on
/// the gateway-class machines CI runs on. A synchronous test that runs for tens of seconds holds one of them all that
/// time; two such tests (the store's crash tests once did) froze every other test for 40 s, so timers fired late and
/// bounded waits timed out in tests that had nothing wrong with them.
public func onOwnThread<T: Sendable>(
    _ name: String = "tether-test-blocking", _ work: @escaping @Sendable () throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.name = name
        thread.start()
    }
}
