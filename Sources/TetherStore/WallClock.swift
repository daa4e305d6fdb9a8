import Foundation
import LinkProtocol

/// The gateway's wall clock as a `LinkInstant` (CLOCK_REALTIME).
public enum WallClock {
    @Sendable public static func now() -> LinkInstant {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return LinkInstant(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }
}
