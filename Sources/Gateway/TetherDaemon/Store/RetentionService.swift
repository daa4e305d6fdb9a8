import Logging
import ServiceLifecycle
import LinkProtocol
import TetherStore
import TetherPrimitives

/// Prunes synced data older than the retention period (docs/design/store.md, "Retention") once at start and then every
/// `interval`. Only synced rows are ever deleted; a failure is logged and retried at the next tick.
struct RetentionService: Service {
    let retention: Retention
    let interval: Duration
    let clock: @Sendable () -> Timestamp
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let report = try retention.prune(now: clock())
                if report.events + report.telemetry + report.anchors > 0 {
                    logger.info("pruned synced data", metadata: [
                        "events": "\(report.events)", "telemetry": "\(report.telemetry)", "anchors": "\(report.anchors)",
                    ])
                }
            } catch {
                logger.warning("pruning failed; retrying at the next interval", metadata: ["error": "\(error)"])
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
        }
    }
}
