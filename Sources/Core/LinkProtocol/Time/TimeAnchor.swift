import TetherPrimitives
/// One point that ties the device's clock of one boot to gateway time (§9.2).
public struct TimeAnchor: Hashable, Sendable, Codable {
    public var bootCounter: UInt16
    /// Device time in microseconds since boot: the midpoint `(T2 + T3)/2` of the device's receive and transmit
    /// ticks, widened past the 32-bit tick wrap (§9.8). Microseconds keep the half-tick of the midpoint exact.
    public var deviceMicroseconds: Int64
    /// Gateway wall-clock time at the midpoint `(t1 + t4)/2`, nanoseconds since the Unix epoch.
    public var gatewayNanoseconds: Int64
    /// `RTT/2`: how far the midpoint can be off for any split of the delay between the two directions.
    public var uncertaintyNanoseconds: Int64
    public var roundTripNanoseconds: Int64

    public init(bootCounter: UInt16, deviceMicroseconds: Int64, gatewayNanoseconds: Int64, uncertaintyNanoseconds: Int64, roundTripNanoseconds: Int64) {
        self.bootCounter = bootCounter
        self.deviceMicroseconds = deviceMicroseconds
        self.gatewayNanoseconds = gatewayNanoseconds
        self.uncertaintyNanoseconds = uncertaintyNanoseconds
        self.roundTripNanoseconds = roundTripNanoseconds
    }
}

/// One time-sync exchange before it becomes an anchor (§9.2).
public struct TimeSyncSample: Hashable, Sendable {
    public var bootCounter: UInt16
    /// t1: the gateway wrote the request.
    public var requestSentAt: Timestamp
    /// t4: the gateway received the response.
    public var responseReceivedAt: Timestamp
    /// T2, T3 widened past the tick wrap: device milliseconds since boot.
    public var deviceReceiveTicks: Int64
    public var deviceTransmitTicks: Int64

    public init(bootCounter: UInt16, requestSentAt: Timestamp, responseReceivedAt: Timestamp, deviceReceiveTicks: Int64, deviceTransmitTicks: Int64) {
        self.bootCounter = bootCounter
        self.requestSentAt = requestSentAt
        self.responseReceivedAt = responseReceivedAt
        self.deviceReceiveTicks = deviceReceiveTicks
        self.deviceTransmitTicks = deviceTransmitTicks
    }

    /// `RTT = (t4 − t1) − (T3 − T2)`, or `nil` when the device claims to have held the request longer than the
    /// whole round trip: its clock or its answer is wrong, and such a sample must not become an anchor.
    public var roundTripNanoseconds: Int64? {
        let total = responseReceivedAt.nanoseconds - requestSentAt.nanoseconds
        let held = (deviceTransmitTicks - deviceReceiveTicks) * 1_000_000
        let roundTrip = total - held
        return roundTrip >= 0 ? roundTrip : nil
    }

    public var anchor: TimeAnchor? {
        guard let roundTrip = roundTripNanoseconds else { return nil }
        return TimeAnchor(
            bootCounter: bootCounter,
            deviceMicroseconds: (deviceReceiveTicks + deviceTransmitTicks) * 500,
            gatewayNanoseconds: requestSentAt.nanoseconds + (responseReceivedAt.nanoseconds - requestSentAt.nanoseconds) / 2,
            uncertaintyNanoseconds: roundTrip / 2,
            roundTripNanoseconds: roundTrip)
    }

    /// §9.3: of a burst, the sample with the smallest round trip (the first of equals).
    public static func bestAnchor(of samples: [TimeSyncSample]) -> TimeAnchor? {
        samples.compactMap(\.anchor).min { $0.roundTripNanoseconds < $1.roundTripNanoseconds }
    }
}

/// A derived wall-clock time with its uncertainty (§9.5).
public struct TimeEstimate: Hashable, Sendable, Codable {
    public var utcNanoseconds: Int64
    public var uncertaintyNanoseconds: Int64

    public init(utcNanoseconds: Int64, uncertaintyNanoseconds: Int64) {
        self.utcNanoseconds = utcNanoseconds
        self.uncertaintyNanoseconds = uncertaintyNanoseconds
    }
}
