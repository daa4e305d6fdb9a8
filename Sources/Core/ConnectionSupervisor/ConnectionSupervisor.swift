import TetherPrimitives
/// Decides which device to connect next, when to retry and when to let go: a pure state machine in the style of
/// the link core. Everything that affects its decisions lives in this file.
///
/// Inputs are facts (`SupervisorInput`), outputs are orders (`SupervisorOrder`). No clock, no I/O, no randomness
/// of its own: time comes with every input and the jitter comes from a seeded `SplitMix64`.
///
/// Rules:
/// 1. One Connect in flight per adapter (BlueZ serialises LE connection attempts and answers InProgress otherwise).
/// 2. At most `slotBudget` devices connected or connecting.
/// 3. A failed connect backs off with full jitter: uniform in `[0, min(cap, base * 2^(attempts-1))]`. So does a
///    link that fails before it is healthy (set-up refused, the device unresponsive): Disconnect, wait for
///    `Connected=false` (bounded by `clearingTimeout`), then the backoff — never a reconnect at once. Attempts
///    count from the last healthy link, not the last successful Connect: a Connect that always succeeds followed
///    by a set-up that always fails must still back off further each time.
/// 4. InProgress for our own device: Disconnect, then RemoveDevice, then wait for `Connected=false` (bounded by
///    `clearingTimeout`) before the backoff starts.
/// 5. A dropped link, and every link after a bluetoothd restart, is reconnected.
/// 6. Every Connect spends a token of a global bucket (`reconnectBurst`, one per `reconnectInterval`): no storms.
/// 7. Shutdown disconnects everything and starts nothing new.
///
/// The driver must bound every Connect it makes (BlueZ `Device.connect(timeout:)` does) and report its outcome.
/// Outcomes for a device that is not `.connecting` (for example after a restart cleared it) are stale and ignored.
public struct ConnectionSupervisor: Sendable {
    public let configuration: SupervisorConfiguration
    private var random: SplitMix64
    private var records: [DeviceAddress: DeviceStatus] = [:]
    private var inFlight: DeviceAddress?
    private var tokens: Int
    private var lastRefill: SupervisorInstant?
    private var armed: SupervisorInstant?
    public private(set) var isShuttingDown = false

    public init(configuration: SupervisorConfiguration = SupervisorConfiguration()) {
        self.configuration = configuration
        random = SplitMix64(seed: configuration.seed)
        tokens = max(configuration.reconnectBurst, 1)
    }

    // MARK: Observation

    /// Every supervised device's status.
    public var devices: [DeviceAddress: DeviceStatus] { records }

    public func status(of address: DeviceAddress) -> DeviceStatus? { records[address] }

    /// The device whose Connect is in flight, if any.
    public var connectInFlight: DeviceAddress? { inFlight }

    public var connectedCount: Int { records.values.count { $0.phase == .connected } }

    /// The instant the driver's timer is armed for, if any.
    public var armedTimer: SupervisorInstant? { armed }

    // MARK: Input

    /// Applies one fact and returns the orders it causes, in the order they must be carried out.
    public mutating func handle(_ input: SupervisorInput) -> [SupervisorOrder] {
        var orders: [SupervisorOrder] = []
        let now: SupervisorInstant
        switch input {
        case .deviceWanted(let address, let at):
            now = at
            guard !isShuttingDown else { return [] }
            if var record = records[address] {
                record.wanted = true
                records[address] = record
            } else {
                records[address] = DeviceStatus(
                    phase: .waiting, wanted: true, attempts: 0, lastError: nil, lastBackoff: nil, waitingSince: at)
            }

        case .deviceUnwanted(let address, let at):
            now = at
            guard var record = records[address] else { return [] }
            record.wanted = false
            switch record.phase {
            case .waiting, .backingOff:
                records[address] = nil
                return schedule(now: now, orders: [])
            case .connected:
                record.phase = .disconnecting
                orders.append(.disconnect(address))
            case .connecting, .clearing, .abandoning, .disconnecting:
                break  // the pending outcome decides
            }
            records[address] = record

        case .connectSucceeded(let address, let at):
            now = at
            guard var record = records[address], record.phase == .connecting, inFlight == address else { return [] }
            inFlight = nil
            // Rule 3: attempts are forgiven by a healthy link (`linkHealthy`), not by a Connect alone.
            if record.wanted && !isShuttingDown {
                record.phase = .connected
            } else {
                record.phase = .disconnecting
                orders.append(.disconnect(address))
            }
            records[address] = record

        case .connectFailed(let address, let kind, let at):
            now = at
            guard var record = records[address], record.phase == .connecting, inFlight == address else { return [] }
            inFlight = nil
            record.attempts += 1
            record.lastError = kind
            let delay = drawBackoff(attempts: record.attempts)
            record.lastBackoff = delay
            switch kind {
            case .inProgress:
                // Rule 4: BlueZ holds a half-open attempt; clear it before any retry.
                record.phase = .clearing(deadline: at + configuration.clearingTimeout, retryDelay: delay)
                orders.append(.disconnect(address))
                orders.append(.removeDevice(address))
            case .abort, .other, .linkFailed:
                if record.wanted && !isShuttingDown {
                    record.phase = .backingOff(until: at + delay)
                } else {
                    records[address] = nil
                    return schedule(now: now, orders: orders)
                }
            }
            records[address] = record

        case .linkFailed(let address, let at):
            now = at
            guard var record = records[address], record.phase == .connected else { return [] }
            record.attempts += 1
            record.lastError = .linkFailed
            let delay = drawBackoff(attempts: record.attempts)
            record.lastBackoff = delay
            // Rule 3: the link is dropped and retried after the backoff, once Connected=false says it is down.
            record.phase = .abandoning(deadline: at + configuration.clearingTimeout, retryDelay: delay)
            orders.append(.disconnect(address))
            records[address] = record

        case .linkHealthy(let address, let at):
            now = at
            guard var record = records[address], record.phase == .connected else { return [] }
            record.attempts = 0
            record.lastError = nil
            records[address] = record

        case .disconnected(let address, let at):
            now = at
            guard var record = records[address] else { return [] }
            switch record.phase {
            case .connected, .disconnecting:
                if record.wanted && !isShuttingDown {
                    record.phase = .waiting  // Rule 5: reconnect, through the token bucket.
                    record.waitingSince = at
                } else {
                    records[address] = nil
                    return schedule(now: now, orders: [])
                }
            case .clearing(_, let retryDelay), .abandoning(_, let retryDelay):
                if record.wanted && !isShuttingDown {
                    record.phase = .backingOff(until: at + retryDelay)
                } else {
                    records[address] = nil
                    return schedule(now: now, orders: [])
                }
            case .waiting, .backingOff, .connecting:
                break  // a Connect's own outcome is reported separately
            }
            records[address] = record

        case .bluezRestarted(let at):
            now = at
            inFlight = nil
            for (address, record) in records {
                switch record.phase {
                case .waiting, .backingOff:
                    continue
                case .abandoning(_, let retryDelay) where record.wanted && !isShuttingDown:
                    // The failed link is gone with bluetoothd; its backoff still applies (rule 3).
                    var updated = record
                    updated.phase = .backingOff(until: at + retryDelay)
                    records[address] = updated
                case .connecting, .connected, .clearing, .abandoning, .disconnecting:
                    if record.wanted && !isShuttingDown {
                        var updated = record
                        updated.phase = .waiting
                        updated.waitingSince = at
                        records[address] = updated
                    } else {
                        records[address] = nil
                    }
                }
            }

        case .timerFired(let at):
            now = at
            for (address, record) in records {
                switch record.phase {
                case .backingOff(let until) where until <= at:
                    var updated = record
                    updated.phase = .waiting
                    updated.waitingSince = at
                    records[address] = updated
                case .clearing(let deadline, let retryDelay) where deadline <= at,
                    .abandoning(let deadline, let retryDelay) where deadline <= at:
                    // Connected=false never came: retry anyway, after the backoff.
                    var updated = record
                    updated.phase = .backingOff(until: at + retryDelay)
                    records[address] = updated
                case .waiting, .backingOff, .connecting, .connected, .clearing, .abandoning, .disconnecting:
                    continue
                }
            }

        case .shutdown(let at):
            now = at
            isShuttingDown = true
            for address in records.keys.sorted() {
                guard var record = records[address] else { continue }
                record.wanted = false
                switch record.phase {
                case .waiting, .backingOff:
                    records[address] = nil
                    continue
                case .connected, .connecting:
                    // A Disconnect also cancels a pending LE Connect in BlueZ.
                    record.phase = .disconnecting
                    orders.append(.disconnect(address))
                    if inFlight == address { inFlight = nil }
                case .clearing, .abandoning, .disconnecting:
                    break
                }
                records[address] = record
            }
        }
        return schedule(now: now, orders: orders)
    }

    // MARK: Scheduling

    /// Starts the next connect if rules 1, 2 and 6 allow it, then arms the timer for the next deadline.
    private mutating func schedule(now: SupervisorInstant, orders: [SupervisorOrder]) -> [SupervisorOrder] {
        var orders = orders
        refillTokens(now: now)
        var waitingForToken = false
        if !isShuttingDown, inFlight == nil, occupiedSlots < configuration.slotBudget,
            let next = nextWaiting()
        {
            if tokens > 0 {
                tokens -= 1
                inFlight = next
                records[next]?.phase = .connecting
                orders.append(.connect(next))
            } else {
                waitingForToken = true
            }
        }
        var deadline: SupervisorInstant? = nil
        func consider(_ instant: SupervisorInstant) {
            if deadline.map({ instant < $0 }) ?? true { deadline = instant }
        }
        for record in records.values {
            switch record.phase {
            case .backingOff(let until): consider(until)
            case .clearing(let clearDeadline, _), .abandoning(let clearDeadline, _): consider(clearDeadline)
            case .waiting, .connecting, .connected, .disconnecting: break
            }
        }
        if waitingForToken, let lastRefill { consider(lastRefill + configuration.reconnectInterval) }
        if let deadline, deadline != armed || armed.map({ $0 <= now }) ?? true {
            armed = deadline
            orders.append(.armTimer(at: deadline))
        } else if deadline == nil {
            armed = nil
        }
        return orders
    }

    private var occupiedSlots: Int {
        records.values.count { $0.phase == .connected || $0.phase == .connecting }
    }

    /// The device waiting longest (ties by address, for determinism).
    private func nextWaiting() -> DeviceAddress? {
        records.filter { $0.value.phase == .waiting }
            .min { ($0.value.waitingSince, $0.key) < ($1.value.waitingSince, $1.key) }?.key
    }

    private mutating func refillTokens(now: SupervisorInstant) {
        let burst = max(configuration.reconnectBurst, 1)
        let interval = max(configuration.reconnectInterval.supervisorNanoseconds, 1)
        guard let last = lastRefill else {
            lastRefill = now
            return
        }
        guard tokens < burst else {
            lastRefill = now
            return
        }
        let elapsed = now.nanoseconds &- last.nanoseconds
        guard elapsed > 0 else { return }
        let earned = elapsed / interval
        guard earned > 0 else { return }
        tokens = Int(min(Int64(burst), Int64(tokens) + earned))
        lastRefill = tokens == burst ? now : SupervisorInstant(nanoseconds: last.nanoseconds &+ earned &* interval)
    }

    /// Full jitter: uniform in `[0, min(cap, base * 2^(attempts-1))]`.
    private mutating func drawBackoff(attempts: Int) -> Duration {
        let base = max(configuration.backoffBase.supervisorNanoseconds, 0)
        let cap = max(configuration.backoffCap.supervisorNanoseconds, 0)
        let shift = min(max(attempts - 1, 0), 62)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << shift)
        let ceiling = overflow ? cap : min(cap, scaled)
        guard ceiling > 0 else { return .zero }
        let draw = UInt64.random(in: 0...UInt64(ceiling), using: &random)
        return .nanoseconds(Int64(draw))
    }
}
