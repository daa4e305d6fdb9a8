/// How fast a simulated BLE link moves notifications: a deliberately simple model.
///
/// Every `connectionIntervalMilliseconds` one connection event happens. In it the device sends at most
/// `notificationsPerEvent` queued notifications (each at most `MTU - 3` bytes, as the firmware already cuts them),
/// and the firmware's retransmission timer is checked. So throughput is bounded by
/// `notificationsPerEvent / interval` notifications per second (defaults: 6 per 15 ms = 400/s, about 98 kB/s at
/// MTU 247), which is the order of a real LE link. The gateway's writes to the SMP characteristic cross the other
/// way, up to `notificationsPerEvent` of them per event (each exchange in an event carries one packet each way: Core
/// v5.3 Vol 6 Part B §4.5.1), so an image upload's ceiling is `notificationsPerEvent / interval` writes of `MTU - 3`
/// bytes a second. The Tether link's own writes (ACKs, commands: a few bytes, rarely) are not rate-limited.
public struct LinkModel: Codable, Hashable, Sendable {
    /// BLE's intervals are multiples of 1.25 ms from 7.5 ms (Core v5.3 Vol 6 Part B §4.5.1); any positive value is
    /// taken (at least 0.1 ms).
    public var connectionIntervalMilliseconds: Double = 15
    public var notificationsPerEvent: Int = 6
    /// The ATT MTU the simulated link negotiates (the `MTU` property and AcquireNotify/AcquireWrite's `q`).
    public var mtu: UInt16 = 247
    /// How long `Connect` takes before `Connected=true`.
    public var connectMilliseconds: Int = 30
    /// How long service discovery takes after the Connect reply before `ServicesResolved=true`.
    public var serviceDiscoveryMilliseconds: Int = 40
    /// Lifts the rate limit (benchmarks): every connection event sends all queued notifications, and
    /// `StreamNotifications` sends as fast as the client's socket (or the bus) takes them.
    public var unthrottled = false

    public init() {}

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        connectionIntervalMilliseconds =
            try container.decodeIfPresent(Double.self, forKey: .connectionIntervalMilliseconds) ?? 15
        notificationsPerEvent = try container.decodeIfPresent(Int.self, forKey: .notificationsPerEvent) ?? 6
        mtu = try container.decodeIfPresent(UInt16.self, forKey: .mtu) ?? 247
        connectMilliseconds = try container.decodeIfPresent(Int.self, forKey: .connectMilliseconds) ?? 30
        serviceDiscoveryMilliseconds =
            try container.decodeIfPresent(Int.self, forKey: .serviceDiscoveryMilliseconds) ?? 40
        unthrottled = try container.decodeIfPresent(Bool.self, forKey: .unthrottled) ?? false
    }

    var connectionInterval: Duration { .microseconds(Int64((max(connectionIntervalMilliseconds, 0.1) * 1000).rounded())) }
}
