import Glibc

/// The gateway's wall clock (CLOCK_REALTIME) as a `Timestamp`: the one place Tether reads the time of day.
/// Cores never call it; the daemon, the simulators and the peripheral pass what it returns into them.
public enum WallClock {
    @Sendable public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }
}
