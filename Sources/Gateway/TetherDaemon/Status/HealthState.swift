import Synchronization

/// What `/health` answers: healthy while the store can be read and the control API holds its bus name.
/// Each part reports in; the endpoint and the watchdog read the verdict.
public final class HealthState: Sendable {
    public struct Verdict: Hashable, Sendable {
        public var healthy: Bool
        public var problems: [String]
    }

    private struct Parts {
        var storeOK = true
        var storeReason: String?
        var controlOK = false
        var controlReason: String? = "control API not started yet"
    }

    private let parts = Mutex(Parts())

    public init() {}

    func setStore(ok: Bool, reason: String?) {
        parts.withLock {
            $0.storeOK = ok
            $0.storeReason = reason
        }
    }

    func setControl(ok: Bool, reason: String?) {
        parts.withLock {
            $0.controlOK = ok
            $0.controlReason = reason
        }
    }

    public var verdict: Verdict {
        parts.withLock { parts in
            var problems: [String] = []
            if !parts.storeOK, let reason = parts.storeReason { problems.append(reason) }
            if !parts.controlOK, let reason = parts.controlReason { problems.append(reason) }
            // A store that refuses new data (disk full) is degraded, not dead: report it, stay healthy, so
            // systemd does not restart a daemon that restarting cannot help.
            var notes = problems
            if parts.storeOK, let reason = parts.storeReason { notes.append(reason) }
            return Verdict(healthy: parts.storeOK && parts.controlOK, problems: notes)
        }
    }
}
