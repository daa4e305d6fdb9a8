/// The supervisor's clock: nanoseconds since an origin the driver chooses (a manual clock in tests).
public struct SupervisorInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    public static let zero = SupervisorInstant(nanoseconds: 0)

    public static func < (lhs: SupervisorInstant, rhs: SupervisorInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public static func + (lhs: SupervisorInstant, rhs: Duration) -> SupervisorInstant {
        SupervisorInstant(nanoseconds: lhs.nanoseconds.addingClamped(rhs.supervisorNanoseconds))
    }

    /// The time from `rhs` to `lhs`.
    public static func - (lhs: SupervisorInstant, rhs: SupervisorInstant) -> Duration {
        .nanoseconds(lhs.nanoseconds &- rhs.nanoseconds)
    }

    public var description: String { "t+\(nanoseconds)ns" }
}

/// A device's Bluetooth address as BlueZ writes it (`C0:54:45:00:00:01`).
public struct DeviceAddress: Hashable, Comparable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public static func < (lhs: DeviceAddress, rhs: DeviceAddress) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { rawValue }
}

/// How a Connect failed, as far as the supervisor's rules care.
public enum ConnectFailureKind: Hashable, Sendable {
    /// `org.bluez.Error.InProgress`: BlueZ still holds a half-open attempt for this device.
    case inProgress
    /// `org.bluez.Error.Failed` "le-connection-abort-by-local" (the controller gave up).
    case abort
    /// Anything else, including the driver's own timeout.
    case other
    /// The Connect succeeded, but the link failed before it was healthy (`SupervisorInput.linkFailed`).
    case linkFailed
}

/// A fact the driver reports.
public enum SupervisorInput: Hashable, Sendable {
    case deviceWanted(DeviceAddress, at: SupervisorInstant)
    case deviceUnwanted(DeviceAddress, at: SupervisorInstant)
    case connectSucceeded(DeviceAddress, at: SupervisorInstant)
    case connectFailed(DeviceAddress, ConnectFailureKind, at: SupervisorInstant)
    /// A connected device's link could not be set up, or was given up before it became healthy (GATT missing,
    /// AcquireNotify refused, the device unresponsive): rule 3 backs it off like a failed Connect.
    case linkFailed(DeviceAddress, at: SupervisorInstant)
    /// The device's link is set up and working (its session's handshake completed): its failed attempts and last
    /// error are forgiven.
    case linkHealthy(DeviceAddress, at: SupervisorInstant)
    /// `Connected=false` was seen for the device.
    case disconnected(DeviceAddress, at: SupervisorInstant)
    /// bluetoothd restarted (org.bluez changed owner): every link and every pending call is gone.
    case bluezRestarted(at: SupervisorInstant)
    case timerFired(at: SupervisorInstant)
    case shutdown(at: SupervisorInstant)
}

/// An order the driver carries out.
public enum SupervisorOrder: Hashable, Sendable {
    /// Call `Device1.Connect` (bounded by the driver) and report `connectSucceeded` or `connectFailed`.
    case connect(DeviceAddress)
    /// Call `Device1.Disconnect`; report `disconnected` when `Connected=false` is seen.
    case disconnect(DeviceAddress)
    /// Call `Adapter1.RemoveDevice` (clears BlueZ's stale state for the device).
    case removeDevice(DeviceAddress)
    /// (Re)arm the single timer: report `timerFired` at or after this instant. Replaces any earlier arming.
    case armTimer(at: SupervisorInstant)
}

/// Where a supervised device is.
public enum DevicePhase: Hashable, Sendable {
    /// Wanted and eligible: waits for the adapter's single connect slot, a free device slot and a rate token.
    case waiting
    /// Waits out a backoff delay after a failed connect.
    case backingOff(until: SupervisorInstant)
    /// Its Connect is the one in flight.
    case connecting
    case connected
    /// After InProgress: Disconnect and RemoveDevice were ordered; waits for `Connected=false` (or the deadline),
    /// then backs off for `retryAfter`.
    case clearing(deadline: SupervisorInstant, retryDelay: Duration)
    /// After `linkFailed`: Disconnect was ordered; waits for `Connected=false` (or the deadline), then backs off
    /// for `retryDelay` (rule 3).
    case abandoning(deadline: SupervisorInstant, retryDelay: Duration)
    /// A Disconnect was ordered (unwanted or shutdown); waits for `Connected=false`.
    case disconnecting
}

/// What the supervisor knows about one device; observable by the CLI and the metrics.
public struct DeviceStatus: Hashable, Sendable {
    public var phase: DevicePhase
    /// Whether the device should be connected (false while an unwanted device is being disconnected).
    public var wanted: Bool
    /// Consecutive failed attempts (a failed Connect, or a link that failed before it was healthy) since the last
    /// healthy link.
    public var attempts: Int
    public var lastError: ConnectFailureKind?
    /// The last backoff delay drawn (always within `[0, backoffCap]`).
    public var lastBackoff: Duration?
    /// Since when the device has been `.waiting` (oldest goes first).
    var waitingSince: SupervisorInstant
}

/// The supervisor's tunables.
public struct SupervisorConfiguration: Hashable, Sendable {
    /// At most this many devices connected or connecting at once.
    public var slotBudget: Int = 5
    /// Backoff before attempt n+1 is uniform in `[0, min(backoffCap, backoffBase * 2^(n-1))]` (full jitter).
    public var backoffBase: Duration = .milliseconds(500)
    public var backoffCap: Duration = .seconds(60)
    /// Global reconnect rate: a token bucket of `reconnectBurst` tokens, one new token per `reconnectInterval`.
    public var reconnectBurst: Int = 3
    public var reconnectInterval: Duration = .seconds(1)
    /// How long to wait for `Connected=false` after clearing an InProgress device before retrying anyway.
    public var clearingTimeout: Duration = .seconds(10)
    /// Seeds the jitter.
    public var seed: UInt64 = 1

    public init() {}
}

extension Duration {
    /// Whole nanoseconds, clamped to Int64.
    var supervisorNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingClamped(attoseconds / 1_000_000_000)
    }
}

extension Int64 {
    func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        if overflow { return other < 0 ? .min : .max }
        return sum
    }
}
