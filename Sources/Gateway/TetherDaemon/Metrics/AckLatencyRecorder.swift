import Synchronization
import TetherGateway
import LinkProtocol

/// Times each persist batch from its submission to the group committer to its durable commit, after which the
/// session writes the ACK as its next action (§8.2). Fed by the gateway's trace; one entry per batch in flight.
final class AckLatencyRecorder: Sendable {
    /// Keyed by device and batch: batch ids are numbered per session.
    private let submitted = Mutex<[BatchKey: ContinuousClock.Instant]>([:])

    struct BatchKey: Hashable {
        var address: String
        var batch: PersistBatch.ID
    }
    private let metrics: DaemonMetrics

    init(metrics: DaemonMetrics) { self.metrics = metrics }

    func record(_ event: GatewayTrace) {
        switch event {
        case .submitted(let address, let batch):
            let now = ContinuousClock.now
            submitted.withLock { $0[BatchKey(address: address, batch: batch)] = now }
        case .committed(let address, let batch, _), .persistFailed(let address, let batch, _):
            let now = ContinuousClock.now
            let key = BatchKey(address: address, batch: batch)
            if let start = submitted.withLock({ $0.removeValue(forKey: key) }), case .committed = event {
                metrics.ackLatency.recordNanoseconds(start.duration(to: now).nanoseconds)
            }
        case .wrote, .received, .settings, .settingsStored, .healthRecordDeletion, .healthRecordAudit, .userConsent:
            break
        }
    }
}
