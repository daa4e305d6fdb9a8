/// Tunables of the session; the defaults are the protocol's (§ cited on each).
public struct LinkSessionConfiguration: Hashable, Sendable {
    public var versions: ClosedRange<UInt8> = ProtocolVersion.supported
    /// §7.1, §8.6.
    public var window: UInt8 = 16
    /// §8.7: the retry interval, and the attempts (sent while the device was not busy) before giving up.
    public var requestTimeout: Duration = .milliseconds(1500)
    public var requestAttempts = 3
    /// §3.4.
    public var stallTimeout: Duration = .milliseconds(500)
    /// §9.1.
    public var timeSyncBurst = 5
    public var timeSyncSpacing: Duration = .milliseconds(100)
    public var timeSyncTimeout: Duration = .milliseconds(1500)
    public var timeSyncInterval: Duration = .seconds(600)
    /// §9.1: after a burst with no usable sample.
    public var timeSyncRetry: Duration = .seconds(10)

    public init() {}
}
