import CoreMetrics
import Metrics
import Prometheus
import TetherStore
import TetherSync

/// tetherd's Prometheus metrics, created through swift-metrics with a factory bound to this daemon's own
/// registry (not the process-wide bootstrap, so several daemons can live in one test process).
///
/// Event-driven metrics (connections, frames, ACK latency, sync runs) are counted where they happen; the store's
/// state (outbox depth by status, database size, events stored) is sampled by `StoreSampler`.
public final class DaemonMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    public let devicesConnected: CoreMetrics.Gauge
    public let framesReceived: CoreMetrics.Counter
    public let framesSent: CoreMetrics.Counter
    public let eventsCommitted: CoreMetrics.Counter
    public let ackLatency: Metrics.Timer
    public let databaseBytes: CoreMetrics.Gauge
    /// SQLite's own allocations in tetherd (SQLiteHeap): the part of resident memory its cache sizes bound.
    public let sqliteHeapBytes: CoreMetrics.Gauge
    public let eventsStored: CoreMetrics.Gauge
    public let oldestPendingSeconds: CoreMetrics.Gauge
    public let storageAccepting: CoreMetrics.Gauge

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // ACK latency: from the frame's arrival to the ACK after its durable commit (docs/design/store.md: p99 targets
        // around 20 ms), so the buckets are fine below 100 ms.
        factory.durationHistogramBuckets["tether_ack_latency_seconds"] = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(1000),
        ]
        self.factory = factory
        devicesConnected = CoreMetrics.Gauge(label: "tether_devices_connected", factory: factory)
        framesReceived = CoreMetrics.Counter(label: "tether_frames_received_total", factory: factory)
        framesSent = CoreMetrics.Counter(label: "tether_frames_sent_total", factory: factory)
        eventsCommitted = CoreMetrics.Counter(label: "tether_events_committed_total", factory: factory)
        ackLatency = Metrics.Timer(label: "tether_ack_latency_seconds", factory: factory)
        databaseBytes = CoreMetrics.Gauge(label: "tether_database_bytes", factory: factory)
        sqliteHeapBytes = CoreMetrics.Gauge(label: "tether_sqlite_heap_bytes", factory: factory)
        eventsStored = CoreMetrics.Gauge(label: "tether_events_stored", factory: factory)
        oldestPendingSeconds = CoreMetrics.Gauge(label: "tether_outbox_oldest_pending_seconds", factory: factory)
        storageAccepting = CoreMetrics.Gauge(label: "tether_storage_accepting", factory: factory)
    }

    /// A finished connection attempt: `result` is connected, failed or refused.
    public func connectionAttempt(result: String) {
        CoreMetrics.Counter(label: "tether_connection_attempts_total", dimensions: [("result", result)], factory: factory).increment()
    }

    /// Outbox commands by status (pending, in_progress, failed, conflict, dead_letter).
    public func outboxDepth(status: String, count: Int) {
        CoreMetrics.Gauge(label: "tether_outbox_commands", dimensions: [("status", status)], factory: factory).record(count)
    }

    /// A finished sync run: `result` is ok or failed.
    public func syncFinished(result: String, pushed: Int) {
        CoreMetrics.Counter(label: "tether_sync_runs_total", dimensions: [("result", result)], factory: factory).increment()
        CoreMetrics.Counter(label: "tether_sync_commands_pushed_total", factory: factory).increment(by: pushed)
    }

    /// A health upload run's results (issue 15): `tether_health_upload_samples_total` and
    /// `tether_health_upload_deletions_total` by `result` (applied, duplicate, rejected, failed: rows of failed
    /// requests, sent again later), and `tether_health_upload_requests_total`.
    public func healthUploaded(_ report: HealthUploadReport) {
        for (kind, counts) in [("samples", report.samples), ("deletions", report.deletions)] {
            for (result, count) in [("applied", counts.applied), ("duplicate", counts.duplicate), ("rejected", counts.rejected), ("failed", counts.failed)] {
                CoreMetrics.Counter(label: "tether_health_upload_\(kind)_total", dimensions: [("result", result)], factory: factory).increment(by: count)
            }
        }
        let failed = report.failure == nil ? 0 : 1
        CoreMetrics.Counter(label: "tether_health_upload_requests_total", dimensions: [("result", "ok")], factory: factory).increment(by: report.requests - failed)
        CoreMetrics.Counter(label: "tether_health_upload_requests_total", dimensions: [("result", "failed")], factory: factory).increment(by: failed)
    }

    /// Health rows not yet uploaded, by queue (`samples`, `deletions`) and state (pending, leased, failed, rejected):
    /// `tether_health_upload_rows`. Rejected rows stay until a technician looks (`tether health samples`).
    public func healthUploadBacklog(kind: String, state: String, count: Int) {
        CoreMetrics.Gauge(label: "tether_health_upload_rows", dimensions: [("kind", kind), ("state", state)], factory: factory).record(count)
    }

    /// The text exposition format (version 0.0.4).
    public func exposition() -> String {
        registry.emitToString()
    }
}
