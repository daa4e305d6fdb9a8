import Foundation
import Logging
import SyncContract
import TetherPrimitives
import TetherStore

/// What one health upload run did (`SyncReport.health`).
public struct HealthUploadReport: Hashable, Sendable {
    /// Per queue, what the server said about the rows sent.
    public struct Counts: Hashable, Sendable {
        public var applied = 0
        public var duplicate = 0
        public var rejected = 0
        /// Rows of failed requests (they are `failed` and go again at the next run).
        public var failed = 0
        /// Verdicts for rows no longer leased under the request (their lease expired meanwhile): not marked.
        public var notHeld = 0

        public init() {}
    }

    public var samples = Counts()
    public var deletions = Counts()
    public var requests = 0
    /// The failed request that ended the run, if one did (the run backs off after it).
    public var failure: SyncFailure?
    /// The run did not start: the uploader is backing off after a failure until this instant.
    public var backingOffUntil: Timestamp?

    public init() {}

    public subscript(kind: HealthUploadKind) -> Counts {
        get { kind == .samples ? samples : deletions }
        set {
            switch kind {
            case .samples: samples = newValue
            case .deletions: deletions = newValue
            }
        }
    }
}

/// Points where a test stops the uploader as a killed gateway would: nothing after the point runs, the leases stay
/// in the store. The daemon sets none.
public struct HealthUploaderFaults: Sendable {
    /// Called after a batch's request was answered, before its results are marked; `true` abandons the run there.
    public var abandonAfterAnswer: (@Sendable (HealthUploadKind, _ requestId: String) -> Bool)?

    public init(abandonAfterAnswer: (@Sendable (HealthUploadKind, String) -> Bool)? = nil) {
        self.abandonAfterAnswer = abandonAfterAnswer
    }
}

/// Moves the gateway's health samples and tombstones to the backend exactly once (issue 15; docs/design/health.md,
/// "Upload"): claim a batch under a lease → POST it → mark each row from its result, until nothing is due; samples
/// first, then tombstones. The server deduplicates by sample uid and dedup key, so a batch sent again after a lost
/// answer or a crash is answered `duplicate` and marked uploaded: at least once on the wire, once on the server.
///
/// A failed request (5xx, 429, timeout, dropped connection, any refusal of the whole request) makes its rows
/// `failed` and ends the run; the uploader then backs off as a whole (`HealthUploadPacing`) and the next run after
/// that takes the failed rows again. Tombstones go only in a run whose samples all went through.
public struct HealthUploader: Sendable {
    public let queue: HealthUploadQueue
    let client: SyncHTTPClient
    /// Rows per request (at most the contract's 1000); smaller once the server refused a batch for its size.
    public private(set) var batchSize: Int
    let now: @Sendable () -> Timestamp
    let faults: HealthUploaderFaults
    let logger: Logger
    private(set) var pacing: HealthUploadPacing
    private var random: SplitMix64

    public init(
        queue: HealthUploadQueue, client: SyncHTTPClient, batchSize: Int = 500, backoff: Backoff = Backoff(),
        now: @escaping @Sendable () -> Timestamp, seed: UInt64, faults: HealthUploaderFaults = HealthUploaderFaults(),
        logger: Logger = Logger(label: "tether.sync.health")
    ) {
        self.queue = queue
        self.client = client
        self.batchSize = min(max(1, batchSize), SyncContract.HealthUpload.maximumSamplesPerRequest, SyncContract.HealthUpload.maximumDeletionsPerRequest)
        self.now = now
        self.faults = faults
        self.logger = logger
        self.pacing = HealthUploadPacing(backoff: backoff)
        self.random = SplitMix64(seed: seed)
    }

    /// Whether a run started now would send anything rather than wait out a backoff.
    public func mayRun(at instant: Timestamp) -> Bool { pacing.mayRun(at: instant) }

    /// One run: samples until none is due, then tombstones. Failures end up in the report, never thrown.
    public mutating func run() async -> HealthUploadReport {
        var report = HealthUploadReport()
        let started = now()
        guard pacing.mayRun(at: started) else {
            report.backingOffUntil = pacing.notBefore
            return report
        }
        do throws(SyncFailure) {
            guard try await drain(.samples, into: &report) else { return report }
            guard try await drain(.deletions, into: &report) else { return report }
            pacing.succeeded()
        } catch {
            report.failure = error
            let next = pacing.failed(error, at: now(), using: &random)
            logger.warning("health upload failed; backing off", metadata: [
                "failure": "\(error)", "retryAt": "\(next.nanoseconds)", "failures": "\(pacing.consecutiveFailures)",
            ])
        }
        return report
    }

    /// Sends batches of one queue until none is due. Returns `false` when a fault abandoned the run.
    private mutating func drain(_ kind: HealthUploadKind, into report: inout HealthUploadReport) async throws(SyncFailure) -> Bool {
        while !Task.isCancelled {
            let batch: Batch
            do {
                guard let claimed = try claim(kind) else { return true }
                batch = claimed
            } catch {
                throw SyncFailure(.store, "claiming health \(kind.rawValue): \(error)")
            }
            report.requests += 1
            let answer: SyncHTTPClient.Answer<HealthUploadResponse>
            let verdicts: [(uid: String, verdict: HealthUploadVerdict)]
            do throws(SyncFailure) {
                answer = try await client.uploadHealth(path: batch.path, body: batch.body)
                verdicts = try HealthUploadRules.verdicts(sent: batch.uids, results: answer.body.results).get()
            } catch {
                let failed = (try? queue.fail(kind, requestId: batch.requestId)) ?? 0
                report[kind].failed += failed
                if let smaller = HealthUploadRules.smallerBatch(after: error, sent: batch.uids.count) {
                    // The failed rows are claimable at once: the run goes on with them in smaller batches.
                    logger.notice("the server refused a health batch for its size: smaller batches", metadata: ["batchSize": "\(smaller)", "failure": "\(error)"])
                    batchSize = smaller
                    continue
                }
                throw error
            }
            if faults.abandonAfterAnswer?(kind, batch.requestId) == true { return false }
            let marks: HealthUploadMarks
            do {
                marks = try queue.mark(kind, requestId: batch.requestId, verdicts: verdicts)
            } catch {
                throw SyncFailure(.store, "marking health \(kind.rawValue): \(error)")
            }
            for result in answer.body.results {
                switch result.status {
                case .applied: report[kind].applied += 1
                case .duplicate: report[kind].duplicate += 1
                case .rejected: report[kind].rejected += 1
                }
            }
            report[kind].notHeld += marks.notHeld
            if marks.rejected > 0 {
                logger.warning("the backend rejected health \(kind.rawValue)", metadata: [
                    "count": "\(marks.rejected)", "request": "\(batch.requestId)",
                    "first": "\(answer.body.results.first { $0.status == .rejected }.map { "\($0.uid): \($0.reason ?? "")" } ?? "")",
                ])
            }
        }
        return true
    }

    private struct Batch {
        var requestId: String
        var uids: [String]
        var path: String
        var body: [UInt8]
    }

    private mutating func claim(_ kind: HealthUploadKind) throws -> Batch? {
        let instant = now()
        switch kind {
        case .samples:
            guard let lease = try queue.claimSamples(limit: batchSize, now: instant, using: &random) else { return nil }
            let request = HealthSamplesRequest(uploadRequestId: lease.requestId, samples: lease.items.map(HealthUploadWire.sample))
            return Batch(
                requestId: lease.requestId, uids: lease.items.map(\.record.uid), path: SyncContract.HealthUpload.samplesPath,
                body: try encode(request, kind: kind, requestId: lease.requestId))
        case .deletions:
            guard let lease = try queue.claimDeletions(limit: batchSize, now: instant, using: &random) else { return nil }
            let request = HealthDeletionsRequest(uploadRequestId: lease.requestId, deletions: lease.items.map(HealthUploadWire.deletion))
            return Batch(
                requestId: lease.requestId, uids: lease.items.map(\.uid), path: SyncContract.HealthUpload.deletionsPath,
                body: try encode(request, kind: kind, requestId: lease.requestId))
        }
    }

    /// A batch that cannot be encoded goes back as failed rather than waiting out its lease.
    private func encode(_ request: some Encodable, kind: HealthUploadKind, requestId: String) throws -> [UInt8] {
        do {
            return try HealthUploadWire.body(request)
        } catch {
            _ = try? queue.fail(kind, requestId: requestId)
            throw error
        }
    }
}
