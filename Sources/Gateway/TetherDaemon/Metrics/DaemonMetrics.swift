import CoreMetrics
import Metrics
import Prometheus

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

    /// The text exposition format (version 0.0.4).
    public func exposition() -> String {
        registry.emitToString()
    }
}
