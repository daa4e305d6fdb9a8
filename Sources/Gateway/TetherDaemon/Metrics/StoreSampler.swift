import Logging
import ServiceLifecycle
import TetherStore

/// Samples the store's state into the metrics every `interval`: outbox depth by status, the oldest pending
/// command's age, database size, stored events, whether storage accepts data. Also the health endpoint's view
/// of the database: a sample that fails marks the store unhealthy until one succeeds.
struct StoreSampler: Service {
    let store: StoreQueries
    let metrics: DaemonMetrics
    let health: HealthState
    let interval: Duration
    let logger: Logger
    /// systemd's STATUS= line (`systemctl status tetherd` shows it).
    let notifier: SystemdNotifier

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            sample()
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
        }
    }

    func sample() {
        do {
            let summary = try store.summary()
            for status in OutboxCommandRecord.Status.allCases {
                metrics.outboxDepth(status: status.rawValue, count: summary.outbox[status])
            }
            metrics.oldestPendingSeconds.record(Double(summary.oldestPendingAgeNanoseconds ?? 0) / 1e9)
            metrics.databaseBytes.record(summary.databaseBytes)
            if let heap = summary.sqliteHeap { metrics.sqliteHeapBytes.record(heap.bytes) }
            metrics.eventsStored.record(summary.eventsStored)
            metrics.storageAccepting.record(summary.storageAccepting ? 1 : 0)
            let backlog = summary.healthBacklog
            for kind in HealthUploadKind.allCases {
                for state in HealthUploadState.allCases where state != .uploaded {
                    metrics.healthUploadBacklog(kind: kind.rawValue, state: state.rawValue, count: backlog[kind][state] ?? 0)
                }
            }
            health.setStore(ok: true, reason: summary.storageAccepting ? nil : "storage is refusing new data")
            try? notifier.status(
                "\(summary.eventsStored) events stored; outbox \(summary.outbox.pending + summary.outbox.failed) pending, "
                    + "\(summary.outbox.deadLetter) dead; storage \(summary.storageState)")
        } catch {
            health.setStore(ok: false, reason: "database unreadable: \(error)")
            logger.error("cannot sample the store", metadata: ["error": "\(error)"])
        }
    }
}
