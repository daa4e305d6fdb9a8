import SyncContract
import TetherPrimitives
import TetherStore

/// The health uploader's decisions, pure (docs/design/health.md, "Upload"): what the server's answer means for each
/// row, and when the uploader may run again after a failed request. Facts in, verdicts out; time and randomness are
/// parameters.
enum HealthUploadRules {
    /// Reads the answer to a batch: exactly one result per item sent, in request order, naming the same uid
    /// (`HealthUploadResponse`). Anything else is a protocol violation and the whole request counts as failed: a
    /// verdict is never applied to a row it may not belong to.
    static func verdicts(sent uids: [String], results: [HealthUploadResult]) -> Result<[(uid: String, verdict: HealthUploadVerdict)], SyncFailure> {
        guard results.count == uids.count else {
            return .failure(SyncFailure(.protocolViolation, "the server answered \(results.count) health results for \(uids.count) items"))
        }
        var verdicts: [(uid: String, verdict: HealthUploadVerdict)] = []
        verdicts.reserveCapacity(uids.count)
        for (index, (uid, result)) in zip(uids, results).enumerated() {
            guard result.uid == uid else {
                return .failure(SyncFailure(.protocolViolation, "health result \(index) names \(result.uid), not \(uid)"))
            }
            verdicts.append((uid, verdict(result)))
        }
        return .success(verdicts)
    }

    /// The batch size to go on with after a request of `sent` items failed, or `nil` when the failure is not about
    /// size. The server refuses a batch over its limit with 400 `batch-too-long` carrying `max_commands`, and a body
    /// over its byte limit with 413 (docs/specs/sync-api.yaml, "Errors"): the same run goes on with smaller batches,
    /// as the outbox push does. A single item refused for size is not about batching: it fails like any request.
    static func smallerBatch(after failure: SyncFailure, sent: Int) -> Int? {
        guard failure.kind == .rejected, sent > 1 else { return nil }
        let sizeRefusal = failure.status == 413 || failure.problem?.problemType == .batchTooLong
        guard sizeRefusal else { return nil }
        return max(1, min(failure.problem?.maxCommands ?? sent / 2, sent / 2))
    }

    /// `applied` and `duplicate` both mean the server has it (a duplicate was stored by an earlier attempt whose
    /// answer was lost, or is the same reading under another uid); `rejected` is final, with its reason.
    static func verdict(_ result: HealthUploadResult) -> HealthUploadVerdict {
        switch result.status {
        case .applied, .duplicate: .uploaded
        case .rejected: .rejected(reason: result.reason ?? "")
        }
    }
}

/// When the uploader may run: after a failed request it backs off as a whole (exponential, full jitter, capped,
/// the server's Retry-After as a floor: `Backoff`), and the failed rows wait for the next run after that. A run
/// that completes resets it. Its own pacing, apart from the outbox's: a backend that refuses health uploads (an
/// older server without the routes) slows health down and never the rest of sync.
struct HealthUploadPacing: Sendable {
    let backoff: Backoff
    private(set) var consecutiveFailures = 0
    /// No run before this instant (gateway wall clock); `nil` when not backing off.
    private(set) var notBefore: Timestamp?

    init(backoff: Backoff) { self.backoff = backoff }

    func mayRun(at now: Timestamp) -> Bool { notBefore.map { now >= $0 } ?? true }

    mutating func succeeded() {
        consecutiveFailures = 0
        notBefore = nil
    }

    /// A request failed at `now`; returns when the next run may start.
    @discardableResult
    mutating func failed(_ failure: SyncFailure, at now: Timestamp, using random: inout some RandomNumberGenerator) -> Timestamp {
        consecutiveFailures += 1
        let delay = backoff.delay(afterFailures: consecutiveFailures, retryAfter: failure.retryAfter, using: &random)
        let next = now.advanced(by: delay)
        notBefore = next
        return next
    }
}
