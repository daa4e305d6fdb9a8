import Logging
import ServiceLifecycle

/// Sends WATCHDOG=1 at half of `$WATCHDOG_USEC` while the daemon runs (systemd's WatchdogSec=), and STOPPING=1
/// when the graceful shutdown starts. It is the last service of the group, so it hears of the shutdown first
/// (services stop in reverse order). It pings only while the loop it lives in is alive, so a wedged cooperative
/// pool stops the pings and systemd restarts us.
public struct SystemdService: Service {
    let notifier: SystemdNotifier
    let health: @Sendable () -> Bool
    let logger: Logger

    /// `health` is asked before every ping; a daemon that reports itself unhealthy stops pinging.
    public init(notifier: SystemdNotifier, logger: Logger, health: @escaping @Sendable () -> Bool = { true }) {
        self.notifier = notifier
        self.logger = logger
        self.health = health
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
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if health() {
                do { try notifier.watchdog() } catch { logger.warning("watchdog ping failed: \(error)") }
            } else {
                logger.error("not sending the watchdog ping: the daemon reports itself unhealthy")
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
        }
    }
}
