/// Retry delays for the sync engine (the link as a whole, not one command): exponential with full jitter and a
/// cap, and a server's Retry-After as a floor. Pure: the random source comes in as a parameter.
public struct Backoff: Hashable, Sendable {
    public var base: Duration
    public var cap: Duration

    public init(base: Duration = .milliseconds(500), cap: Duration = .seconds(300)) {
        self.base = base
        self.cap = cap
    }

    /// The ceiling after `failures` consecutive failures (1 for the first): `min(cap, base · 2^(failures − 1))`.
    public func ceiling(afterFailures failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 62)
        let (scaled, overflow) = base.nanoseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        return .nanoseconds(overflow ? cap.nanoseconds : min(cap.nanoseconds, scaled))
    }

    /// "Full jitter": uniform in `0 ... ceiling`, so gateways that failed together do not retry together. A
    /// server's Retry-After is honoured as a lower bound (capped too, so a hostile value cannot park the engine).
    public func delay(afterFailures failures: Int, retryAfter: Duration? = nil, using random: inout some RandomNumberGenerator) -> Duration {
        let ceiling = ceiling(afterFailures: failures).nanoseconds
        let jittered: Duration = ceiling > 0 ? .nanoseconds(Int64.random(in: 0...ceiling, using: &random)) : .zero
        guard let retryAfter else { return jittered }
        return max(jittered, min(retryAfter, cap))
    }
}
