import ConnectionSupervisor
import Foundation
import LinkProtocol
import TetherStore
import TetherPrimitives

/// Time as the gateway reads it, injected so tests can drive the supervisor's timers.
///
/// - `supervisorNow`: a monotonic clock for the supervisor's backoff and token bucket.
/// - `linkNow`: the wall clock (UTC) the link session and the store stamp things with.
/// - `sleep`: how timers wait (cancellation ends the wait by throwing).
public struct GatewayClock: Sendable {
    public var supervisorNow: @Sendable () -> SupervisorInstant
    public var linkNow: @Sendable () -> Timestamp
    public var sleep: @Sendable (Duration) async throws -> Void

    public init(
        supervisorNow: @escaping @Sendable () -> SupervisorInstant,
        linkNow: @escaping @Sendable () -> Timestamp,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.supervisorNow = supervisorNow
        self.linkNow = linkNow
        self.sleep = sleep
    }

    /// CLOCK_MONOTONIC for the supervisor, CLOCK_REALTIME for the link, `Task.sleep` for timers.
    public static let system = GatewayClock(
        supervisorNow: {
            var spec = timespec()
            clock_gettime(CLOCK_MONOTONIC, &spec)
            return SupervisorInstant(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
        },
        linkNow: WallClock.now,
        sleep: { try await Task.sleep(for: $0) })
}
