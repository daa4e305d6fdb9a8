import Logging
import ServiceLifecycle
import Synchronization

/// Sends WATCHDOG=1 at half of `$WATCHDOG_USEC` while the daemon runs (systemd's WatchdogSec=), and STOPPING=1
/// when the graceful shutdown starts. It is the last service of the group, so it hears of the shutdown first
/// (services stop in reverse order). It pings only while the loop it lives in is alive, so a wedged cooperative
/// pool stops the pings and systemd restarts us.
public final class SystemdService: Service, Sendable {
    let notifier: SystemdNotifier
    let health: @Sendable () -> Bool
    let logger: Logger
    /// READY=1 that found the notify socket full, sent again before the next ping (sends never block, so one
    /// can be dropped; a READY=1 lost for good would have systemd kill a healthy daemon at TimeoutStartSec=).
    private let pendingReady = Mutex<String?>(nil)

    /// `health` is asked before every ping; a daemon that reports itself unhealthy stops pinging.
    public init(notifier: SystemdNotifier, logger: Logger, health: @escaping @Sendable () -> Bool = { true }) {
        self.notifier = notifier
        self.logger = logger
        self.health = health
    }

    /// Tells systemd the daemon is ready (READY=1 with a STATUS=). If the socket is full, the watchdog loop
    /// sends it again until it goes.
    public func announceReady(status: String) {
        do {
            try notifier.ready(status: status)
        } catch {
            logger.warning("cannot tell systemd we are ready: \(error)")
            if error.queueFull, notifier.watchdogPingInterval != nil {
                pendingReady.withLock { $0 = status }
            }
        }
    }

    public func run() async throws {
        defer {
            do { try notifier.stopping(status: "stopping: finishing commits and disconnecting devices") } catch {
                logger.warning("cannot tell systemd we are stopping: \(error)")
            }
        }
        guard let interval = notifier.watchdogPingInterval, notifier.isEnabled else {
            // No watchdog: wait for shutdown so the group does not see an early exit.
            try? await gracefulShutdown()
            return
        }
        logger.info("systemd watchdog enabled", metadata: ["ping_interval": "\(interval)"])
        // Unhealthy until the control API holds its name; that start-up wait is not an error. Losing health
        // after having had it is, and it is logged once, not at every skipped ping.
        var wasHealthy = false
        var pingFailing = false
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if let status = pendingReady.withLock({ $0 }) {
                do {
                    try notifier.ready(status: status)
                    pendingReady.withLock { $0 = nil }
                    logger.info("told systemd we are ready, after a full notify socket")
                } catch {}
            }
            if health() {
                if !wasHealthy { logger.debug("healthy: sending watchdog pings") }
                wasHealthy = true
                do {
                    try notifier.watchdog()
                    pingFailing = false
                } catch {
                    if !pingFailing { logger.warning("watchdog ping failed (logged once until one succeeds): \(error)") }
                    pingFailing = true
                }
            } else if wasHealthy {
                wasHealthy = false
                logger.error("not sending watchdog pings: the daemon reports itself unhealthy")
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
        }
    }
}
