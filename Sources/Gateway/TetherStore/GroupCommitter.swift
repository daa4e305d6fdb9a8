import Foundation
import GRDB
import LinkProtocol
import TetherPrimitives

/// Commits the persist batches of every connected device together: one write transaction, one `fsync`, for all
/// the batches that arrived while the previous commit was being synced (or within `linger`). Each caller hears
/// back only after the transaction that holds its batch has committed durably; only then may the session
/// acknowledge the frames (§8.2). So throughput is bounded by how much fits in one commit, not by the fsync rate.
///
/// Completion handlers run on the database writer's queue, in submission order, after the commit. They must be
/// brief: hand the result to the session's owner and return.
///
/// Batches are applied in savepoints: a batch whose content fails is rolled back and reported alone. A storage
/// condition (a limit from `StorageLimits`, SQLITE_FULL, an I/O error) fails the whole group; every batch in it
/// gets the error, which the session hears as `storageFull` (§8.10). Nothing is acknowledged that was not
/// stored.
public final class GroupCommitter: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// Most batches in one transaction; more wait for the next commit.
        public var maximumBatchesPerTransaction = 1024
        /// How long a commit that found fewer batches than the maximum waits for more before it starts. Zero
        /// (the default) commits at once: under load, batches pile up during the previous fsync anyway, and an
        /// idle gateway should not add latency.
        public var linger: Duration = .zero

        public init() {}
    }

    public typealias Completion = @Sendable (Result<BatchOutcome, StoreError>) -> Void

    /// Counters since creation, for metrics and the benchmark.
    public struct Statistics: Hashable, Sendable {
        public var transactions = 0
        public var batchesCommitted = 0
        public var batchesFailed = 0
        public var largestGroup = 0
    }

    public let configuration: Configuration
    private let database: GatewayDatabase
    private let service: ConsumptionService
    private let storageGuard: StorageGuard
    private let clock: @Sendable () -> LinkInstant
    private let onStatusChange: (@Sendable (StorageStatus) -> Void)?
    private let state: Locked<State>

    private struct Pending {
        var batch: PersistBatch
        var completion: Completion
    }

    private struct State {
        var queue: [Pending] = []
        var drainScheduled = false
        var status = StorageStatus.accepting
        var random: SplitMix64
        var statistics = Statistics()
    }

    /// - Parameters:
    ///   - clock: the commit instant (outbox timestamps, `lastSeenAt`); the wall clock in production.
    ///   - seed: randomness for outbox command ids; from the system generator unless a test fixes it.
    ///   - onStatusChange: called on the writer's queue whenever the store starts or stops refusing data; log it.
    public init(
        service: ConsumptionService, configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> LinkInstant = WallClock.now, seed: UInt64? = nil,
        onStatusChange: (@Sendable (StorageStatus) -> Void)? = nil
    ) {
        var system = SystemRandomNumberGenerator()
        self.configuration = configuration
        self.database = service.database
        self.service = service
        self.storageGuard = StorageGuard(database: service.database)
        self.clock = clock
        self.onStatusChange = onStatusChange
        self.state = Locked(State(random: SplitMix64(seed: seed ?? system.next())))
    }

    /// Queues a batch for the next group commit; `completion` runs once it is durable or has failed.
    public func submit(_ batch: PersistBatch, completion: @escaping Completion) {
        let mustSchedule = state.withLock { state in
            state.queue.append(Pending(batch: batch, completion: completion))
            guard !state.drainScheduled else { return false }
            state.drainScheduled = true
            return true
        }
        if mustSchedule { scheduleDrain() }
    }

    /// Queues a batch and waits until it is durable or has failed.
    public func commit(_ batch: PersistBatch) async -> Result<BatchOutcome, StoreError> {
        await withCheckedContinuation { continuation in
            submit(batch) { continuation.resume(returning: $0) }
        }
    }

    public var storageStatus: StorageStatus { state.withLock { $0.status } }
    public var statistics: Statistics { state.withLock { $0.statistics } }

    // MARK: - The writer side

    private func scheduleDrain() {
        database.asyncWriteWithoutTransaction { [self] db in drain(db) }
    }

    /// One group: take what is queued, commit it, complete it. Runs on the writer queue; another drain is
    /// scheduled (behind any other writes already waiting) if more batches arrived meanwhile.
    private func drain(_ db: Database) {
        if configuration.linger > .zero, state.withLock({ $0.queue.count }) < configuration.maximumBatchesPerTransaction {
            Thread.sleep(forTimeInterval: Double(configuration.linger.nanoseconds) / 1e9)
        }
        let (group, seed) = state.withLock { state in
            let count = min(state.queue.count, configuration.maximumBatchesPerTransaction)
            let group = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
            return (group, state.random.next())
        }
        let results = commitGroup(group.map(\.batch), in: db, seed: seed)
        let (statusChange, more) = state.withLock { state in
            state.statistics.transactions += 1
            state.statistics.largestGroup = max(state.statistics.largestGroup, group.count)
            for result in results {
                switch result {
                case .success: state.statistics.batchesCommitted += 1
                case .failure: state.statistics.batchesFailed += 1
                }
            }
            let status = Self.status(after: results)
            let change = status.flatMap { $0 == state.status ? nil : $0 }
            if let status { state.status = status }
            if state.queue.isEmpty { state.drainScheduled = false }
            return (change, !state.queue.isEmpty)
        }
        if more { scheduleDrain() }
        if let statusChange { onStatusChange?(statusChange) }
        for (pending, result) in zip(group, results) { pending.completion(result) }
    }

    /// The transaction. Its results are returned only after COMMIT has returned, which with `synchronous=FULL`
    /// means the WAL is on stable storage.
    private func commitGroup(_ batches: [PersistBatch], in db: Database, seed: UInt64) -> [Result<BatchOutcome, StoreError>] {
        guard !batches.isEmpty else { return [] }
        let now = clock()
        func transaction(isolated: Bool) throws -> [Result<BatchOutcome, StoreError>] {
            var results: [Result<BatchOutcome, StoreError>] = []
            try db.inTransaction(.immediate) {
                results = try service.apply(batches, in: db, now: now, seed: seed, isolated: isolated)
                return .commit
            }
            return results
        }
        do {
            try storageGuard.check(db)
            return try transaction(isolated: false)
        } catch {
            let failure = StoreError(error)
            guard !failure.isStorageCondition, batches.count > 1 else { return batches.map { _ in .failure(failure) } }
        }
        // One batch's content failed and took the transaction with it: commit again with every batch in a
        // savepoint, so that only the faulty one is refused.
        do {
            return try transaction(isolated: true)
        } catch {
            let failure = StoreError(error)
            return batches.map { _ in .failure(failure) }
        }
    }

    /// A storage condition means refusing; any committed batch means accepting again; batch-level failures
    /// alone say nothing about the storage.
    private static func status(after results: [Result<BatchOutcome, StoreError>]) -> StorageStatus? {
        var sawSuccess = false
        for result in results {
            switch result {
            case .success: sawSuccess = true
            case .failure(let error) where error.isStorageCondition: return .refusing(error)
            case .failure: continue
            }
        }
        return sawSuccess ? .accepting : nil
    }
}
