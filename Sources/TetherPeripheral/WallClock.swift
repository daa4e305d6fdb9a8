import Glibc
import LinkProtocol

extension LinkInstant {
    /// Now on the wall clock (CLOCK_REALTIME): the peripheral drives the sans-I/O firmware model with real time.
    static func wallClock() -> LinkInstant {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return LinkInstant(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }
}
