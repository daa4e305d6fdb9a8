import DBus
import Synchronization

/// Emits the control API's signals (docs/control-api.md, "Signals"). `DeviceChanged` is limited to 4 per second
/// per device: a change inside the window is held and the latest state sent when the window ends, so the last
/// state always arrives.
public final class ControlSignals: Sendable {
    let connection: DBusConnection
    let limiter: Mutex<SignalRateLimiter>
    let clock: @Sendable () -> ContinuousClock.Instant

    init(connection: DBusConnection, clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.connection = connection
        self.clock = clock
        limiter = Mutex(SignalRateLimiter(interval: .milliseconds(250)))
    }

    public func deviceChanged(address: String, record: DBusValue) {
        let decision = limiter.withLock { $0.offer(key: address, value: record, at: clock()) }
        switch decision {
        case .sendNow:
            emit("DeviceChanged", record)
        case .heldUntil(let deadline):
            Task { [self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                if let latest = limiter.withLock({ $0.release(key: address, at: clock()) }) { emit("DeviceChanged", latest) }
            }
        case .alreadyHeld:
            break
        }
    }

    public func scanResult(_ result: ScanResult) { emit("ScanResult", ControlRecords.scanResult(result)) }

    public func syncFinished(_ summary: SyncRunSummary) {
        emit("SyncFinished", ControlRecords.dictionary([
            "result": .string(summary.result), "pushed": .uint32(UInt32(clamping: summary.pushed)),
            "pulled": .uint32(UInt32(clamping: summary.pulled)), "dead": .uint32(UInt32(clamping: summary.dead)),
            "conflicts": .uint32(UInt32(clamping: summary.conflicts)), "error": summary.error.map { .string($0) },
        ]))
    }

    private func emit(_ member: String, _ value: DBusValue) {
        try? connection.emitSignal(path: ControlInterface.path, interface: ControlInterface.name, member: member, arguments: [value])
    }
}

/// At most one value per key per `interval`; values offered inside the window replace each other and the last
/// one is released at the window's end. Pure: the caller passes the time.
struct SignalRateLimiter: Sendable {
    enum Decision: Equatable {
        case sendNow
        /// Held; the caller must call `release` at this instant.
        case heldUntil(ContinuousClock.Instant)
        /// Held behind a release already scheduled.
        case alreadyHeld
    }

    let interval: Duration
    private var lastSent: [String: ContinuousClock.Instant] = [:]
    private var held: [String: DBusValue] = [:]

    init(interval: Duration) { self.interval = interval }

    mutating func offer(key: String, value: DBusValue, at now: ContinuousClock.Instant) -> Decision {
        if held[key] != nil {
            held[key] = value
            return .alreadyHeld
        }
        if let last = lastSent[key], now < last + interval {
            held[key] = value
            return .heldUntil(last + interval)
        }
        lastSent[key] = now
        return .sendNow
    }

    mutating func release(key: String, at now: ContinuousClock.Instant) -> DBusValue? {
        guard let value = held.removeValue(forKey: key) else { return nil }
        lastSent[key] = now
        return value
    }
}
