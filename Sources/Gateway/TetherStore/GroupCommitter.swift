import Foundation
import GRDB
import LinkProtocol
import TetherPrimitives

/// Commits the batches of every connected device and every service together (consumption events today, health
/// samples next: anything that is `GroupCommitWork`): one write transaction, one `fsync`, for all the batches that
/// arrived while the previous commit was being synced (or within `linger`). Each caller hears
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
    private let clock: @Sendable () -> Timestamp
    private let onStatusChange: (@Sendable (StorageStatus) -> Void)?
    private let commitObservers = Locked<[@Sendable (_ batchesCommitted: Int) -> Void]>([])
    private let state: Locked<State>

    /// One submitted batch with its type erased: applying it keeps its outcome until the group has committed, and
    /// only then does `complete` hand it on.
    private final class Pending: @unchecked Sendable {
        // Touched only on the writer's queue (apply, then complete), never concurrently.
        private let body: (Database, inout WriteContext) throws -> Void
        private let completion: (StoreError?) -> Void

        init<Work: GroupCommitWork>(_ work: Work, completion: @escaping @Sendable (Result<Work.Outcome, StoreError>) -> Void) {
            var outcome: Work.Outcome?
            body = { db, context in outcome = try work.apply(in: db, context: &context) }
            self.completion = { error in
                if let error { return completion(.failure(error)) }
                guard let outcome else { return completion(.failure(StoreError(.other, "a batch produced no outcome"))) }
                completion(.success(outcome))
            }
        }

        func apply(_ db: Database, _ context: inout WriteContext) throws { try body(db, &context) }
        func complete(_ result: Result<Void, StoreError>) {
            switch result {
            case .success: completion(nil)
            case .failure(let error): completion(error)
            }
        }
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
        clock: @escaping @Sendable () -> Timestamp = WallClock.now, seed: UInt64? = nil,
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

    /// Queues a device's consumption batch for the next group commit; `completion` runs once it is durable or has
    /// failed.
    public func submit(_ batch: PersistBatch, completion: @escaping Completion) {
        submit(ConsumptionWork(service: service, batch: batch), completion: completion)
    }

    /// Queues any service's batch for the next group commit; `completion` runs once it is durable or has failed.
    public func submit<Work: GroupCommitWork>(
        _ work: Work, completion: @escaping @Sendable (Result<Work.Outcome, StoreError>) -> Void
    ) {
        let mustSchedule = state.withLock { state in
            state.queue.append(Pending(work, completion: completion))
            guard !state.drainScheduled else { return false }
            state.drainScheduled = true
            return true
        }
        if mustSchedule { scheduleDrain() }
    }

    /// Queues a batch and waits until it is durable or has failed.
    public func commit(_ batch: PersistBatch) async -> Result<BatchOutcome, StoreError> {
        await commit(ConsumptionWork(service: service, batch: batch))
    }

    /// Queues any service's batch and waits until it is durable or has failed.
    public func commit<Work: GroupCommitWork>(_ work: Work) async -> Result<Work.Outcome, StoreError> {
        await withCheckedContinuation { continuation in
            submit(work) { continuation.resume(returning: $0) }
        }
    }

    /// Calls `observer` after every transaction that committed at least one batch (on the writer's queue, after
    /// the batches' own completions): the store's commits are what trigger sync, not snapshots of devices. It must
    /// be brief.
    public func observeCommits(_ observer: @escaping @Sendable (_ batchesCommitted: Int) -> Void) {
        commitObservers.withLock { $0.append(observer) }
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
        let results = commitGroup(group, in: db, seed: seed)
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
        for (pending, result) in zip(group, results) { pending.complete(result) }
        let committed = results.count { if case .success = $0 { true } else { false } }
        if committed > 0 {
            for observer in commitObservers.withLock({ $0 }) { observer(committed) }
        }
    }

    /// The transaction. Its results are returned only after COMMIT has returned, which with `synchronous=FULL`
    /// means the WAL is on stable storage.
    private func commitGroup(_ batches: [Pending], in db: Database, seed: UInt64) -> [Result<Void, StoreError>] {
        guard !batches.isEmpty else { return [] }
        let now = clock()
        func transaction(isolated: Bool) throws -> [Result<Void, StoreError>] {
            var results: [Result<Void, StoreError>] = []
            try db.inTransaction(.immediate) {
                results = try Self.apply(batches, in: db, now: now, seed: seed, isolated: isolated)
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

    /// Applies the group's batches inside the open transaction.
    ///
    /// Without `isolated`, the first failure is thrown and the caller rolls the whole transaction back: the fast
    /// path, which is all a healthy gateway ever takes. With `isolated`, each batch runs in a savepoint: a batch
    /// whose content fails (a constraint, an injected fault) is rolled back alone and reported, and only a
    /// storage condition (disk full, I/O error) is thrown, failing the whole transaction.
    private static func apply(
        _ batches: [Pending], in db: Database, now: Timestamp, seed: UInt64, isolated: Bool
    ) throws -> [Result<Void, StoreError>] {
        var context = WriteContext(now: now, seed: seed)
        guard isolated else {
            for batch in batches { try batch.apply(db, &context) }
            return batches.map { _ in .success(()) }
        }
        var results: [Result<Void, StoreError>] = []
        results.reserveCapacity(batches.count)
        for batch in batches {
            let saved = context
            do {
                try db.inSavepoint {
                    try batch.apply(db, &context)
                    return .commit
                }
                results.append(.success(()))
            } catch {
                let failure = StoreError(error)
                if failure.isStorageCondition { throw failure }
                context = saved
                results.append(.failure(failure))
            }
        }
        return results
    }

    /// A storage condition means refusing; any committed batch means accepting again; batch-level failures
    /// alone say nothing about the storage.
    private static func status(after results: [Result<Void, StoreError>]) -> StorageStatus? {
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

/// A batch a store service hands the group commit. `apply` runs inside the one shared transaction (in a savepoint
/// of its own when another batch of the group failed) and must leave `context` consistent with what it wrote; its
/// outcome reaches the submitter only after COMMIT (so a session acknowledges nothing that is not durable, §8.2).
public protocol GroupCommitWork: Sendable {
    associatedtype Outcome: Sendable
    func apply(in db: Database, context: inout WriteContext) throws -> Outcome
}

/// A device's consumption batch (events, DEVICE_INFO, telemetry, CONFIG_DATA) through ConsumptionService.
struct ConsumptionWork: GroupCommitWork {
    let service: ConsumptionService
    let batch: PersistBatch

    func apply(in db: Database, context: inout WriteContext) throws -> BatchOutcome {
        try service.apply(batch, in: db, context: &context)
    }
}
