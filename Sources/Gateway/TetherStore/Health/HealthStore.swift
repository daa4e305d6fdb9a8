import Foundation
import GRDB
import TetherPrimitives

/// Failure points that tests and the crash test inject between the writes of one transaction. The daemon passes
/// none.
public struct HealthStoreFaults: Sendable {
    /// Runs after an ingest's samples are written and before its cursor moves: a throw, or a SIGKILL while it
    /// runs, must leave neither.
    public var afterSamplesBeforeCursor: (@Sendable (HealthIngestBatch) throws -> Void)?
    /// Runs after a correction's replacement sample is written and before its deletion row.
    public var afterReplacementBeforeDeletion: (@Sendable () throws -> Void)?
    /// Runs in every change's transaction just before its deletion row: a throw writes nothing of that change (a
    /// tombstoning of several samples that fails part-way keeps the ones committed before).
    public var beforeDeletion: (@Sendable (HealthChange) throws -> Void)?

    public init(
        afterSamplesBeforeCursor: (@Sendable (HealthIngestBatch) throws -> Void)? = nil,
        afterReplacementBeforeDeletion: (@Sendable () throws -> Void)? = nil,
        beforeDeletion: (@Sendable (HealthChange) throws -> Void)? = nil
    ) {
        self.afterSamplesBeforeCursor = afterSamplesBeforeCursor
        self.afterReplacementBeforeDeletion = afterReplacementBeforeDeletion
        self.beforeDeletion = beforeDeletion
    }
}

/// The one writer of the health tables (migration v6; docs/design/store.md, "Health tables").
///
/// - An ingest batch (one lane's delivery from one peripheral) commits its samples and its cursor move in ONE
///   transaction, through the shared `GroupCommitter` with every other device's batches: both or neither, and
///   its completion runs only after COMMIT, so a lane acknowledges or moves on only from durable state.
/// - Samples are inserted with `ON CONFLICT (dedupKey) DO NOTHING` (`HealthDedupKey` has the rule): a reading
///   that arrives again is counted as a duplicate and reported back, never stored twice.
/// - A cursor move that breaks `HealthCursorRule` (backwards in an epoch, an epoch skipped or gone back) refuses
///   the whole batch with a typed `HealthStoreError`; the batch writes nothing.
/// - The change lane (`HealthChange`) commits a sample's deletion or correction with its `healthDeletion` row.
public struct HealthStore: Sendable {
    public let database: GatewayDatabase
    let faults: HealthStoreFaults

    public init(database: GatewayDatabase, faults: HealthStoreFaults = HealthStoreFaults()) {
        self.database = database
        self.faults = faults
    }

    // MARK: - Through the group commit

    /// Queues `batch` for the next group commit; `completion` runs (on the writer's queue, briefly) once it is
    /// durable, refused or failed.
    public func submit(
        _ batch: HealthIngestBatch, to committer: GroupCommitter,
        completion: @escaping @Sendable (Result<HealthIngestOutcome, HealthStoreError>) -> Void
    ) {
        committer.submit(HealthIngestWork(store: self, batch: batch)) { completion(Self.flatten($0)) }
    }

    public func commit(_ batch: HealthIngestBatch, via committer: GroupCommitter) async -> Result<HealthIngestOutcome, HealthStoreError> {
        Self.flatten(await committer.commit(HealthIngestWork(store: self, batch: batch)))
    }

    public func submit(
        _ change: HealthChange, to committer: GroupCommitter,
        completion: @escaping @Sendable (Result<HealthChangeOutcome, HealthStoreError>) -> Void
    ) {
        committer.submit(HealthChangeWork(store: self, change: change)) { completion(Self.flatten($0)) }
    }

    public func commit(_ change: HealthChange, via committer: GroupCommitter) async -> Result<HealthChangeOutcome, HealthStoreError> {
        Self.flatten(await committer.commit(HealthChangeWork(store: self, change: change)))
    }

    // MARK: - In a transaction of their own (tools, tests)

    public func ingest(_ batch: HealthIngestBatch, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(HealthStoreError) -> HealthIngestOutcome {
        try alone(at: now, using: &random) { db, context in try ingest(batch, in: db, context: &context) }
    }

    public func apply(_ change: HealthChange, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(HealthStoreError) -> HealthChangeOutcome {
        try alone(at: now, using: &random) { db, context in try apply(change, in: db, context: &context) }
    }

    private func alone<T>(
        at now: Timestamp, using random: inout some RandomNumberGenerator, _ body: (Database, inout WriteContext) throws -> T
    ) throws(HealthStoreError) -> T {
        let seed = random.next()
        let storageGuard = StorageGuard(database: database)
        let result: Result<T, HealthStoreError>
        do {
            result = try database.write { db in
                try storageGuard.check(db)
                var context = WriteContext(now: now, seed: seed)
                return try Self.refusable(db) { try body(db, &context) }
            }
        } catch {
            throw .store(error)
        }
        return try result.get()
    }

    // MARK: - Inside the transaction

    /// Runs `body` in a savepoint: a `HealthStoreError` rolls back what it wrote and comes back as a value (the
    /// group commit completes the batch with it, and the other batches commit); any other error is thrown.
    static func refusable<T>(_ db: Database, _ body: () throws -> T) throws -> Result<T, HealthStoreError> {
        var result: Result<T, HealthStoreError>?
        try db.inSavepoint {
            do {
                result = .success(try body())
                return .commit
            } catch let refusal as HealthStoreError {
                result = .failure(refusal)
                return .rollback
            }
        }
        guard let result else { throw StoreError(.other, "a health write produced no result") }
        return result
    }

    static func flatten<T>(_ result: Result<Result<T, HealthStoreError>, StoreError>) -> Result<T, HealthStoreError> {
        switch result {
        case .success(let inner): inner
        case .failure(let error): .failure(.store(error))
        }
    }

    func ingest(_ batch: HealthIngestBatch, in db: Database, context: inout WriteContext) throws -> HealthIngestOutcome {
        let (peripheralId, device) = try Self.peripheral(db, uid: batch.peripheralUid)
        // The cursor is judged before anything is written: a refused batch writes nothing at all.
        var cursor: (move: HealthCursorMove, stored: StoredCursor?, decision: HealthCursorRule.Decision)?
        if let move = batch.cursor {
            let stored = try Self.latestCursor(db, peripheralId: peripheralId, stream: move.stream)
            cursor = (move, stored, try HealthCursorRule.decide(stored: stored?.rule, move: move).get())
        }

        var outcome = HealthIngestOutcome()
        outcome.samples.reserveCapacity(batch.samples.count)
        let insert = try db.cachedStatement(sql: Self.insertSampleSQL)
        for sample in batch.samples {
            let key = HealthDedupKey.make(device: device, sample: sample)
            let uid = context.nextSampleUID()
            try insert.execute(arguments: Self.arguments(sample, uid: uid, dedupKey: key, peripheralId: peripheralId))
            outcome.samples.append(db.changesCount == 1 ? .stored(uid: uid) : .duplicate(dedupKey: key))
        }

        guard let cursor else { return outcome }
        try faults.afterSamplesBeforeCursor?(batch)
        let now = context.now.nanoseconds
        switch cursor.decision {
        case .start:
            try Self.insertCursor(db, peripheralId: peripheralId, move: cursor.move, epoch: 0, reason: .first, now: now)
            outcome.cursor = .started
        case .newEpoch(let epoch, let reason):
            try Self.insertCursor(db, peripheralId: peripheralId, move: cursor.move, epoch: epoch, reason: reason, now: now)
            outcome.cursor = .newEpoch(epoch, reason: reason)
        case .advance(let from, let to):
            guard let id = cursor.stored?.id else { throw StoreError(.other, "an advance without a stored cursor") }
            try db.execute(sql: "UPDATE healthIngestCursor SET position = ?, updatedAt = ? WHERE id = ?", arguments: [to, now, id])
            outcome.cursor = .advanced(from: from, to: to)
        case .unchanged:
            outcome.cursor = .unchanged
        }
        return outcome
    }

    // MARK: - Rows

    static let insertSampleSQL = """
        INSERT INTO healthSample (
            uid, dedupKey, peripheralId, characteristic, metricCode, occurrence, valueStatus, reportedMantissa, reportedExponent,
            reportedUnit, canonicalValue, canonicalUnit, effectiveAt, deviceTime, timeBasis, skewMilliseconds, userIndex,
            recordSequence, epoch, lane, rawBytes, parserVersion, receivedAt)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (dedupKey) DO NOTHING
        """

    static func arguments(_ sample: HealthSample, uid: String, dedupKey: String, peripheralId: Int64) -> StatementArguments {
        let value = sample.value
        let values: [(any DatabaseValueConvertible)?] = [
            uid, dedupKey, peripheralId, sample.characteristic, sample.metricCode, sample.occurrence, value.status.rawValue,
            value.reported?.mantissa, value.reported.map { Int64($0.exponent) }, value.reportedUnit, value.canonical?.description,
            value.canonicalUnit, sample.effectiveAt.nanoseconds, sample.deviceTime, sample.timeBasis.rawValue, sample.skewMilliseconds,
            sample.userIndex, sample.recordSequence, sample.epoch, sample.lane.rawValue, sample.rawBytes.map { Data($0) },
            sample.parserVersion, sample.receivedAt.nanoseconds,
        ]
        return StatementArguments(values)
    }

    static func peripheralId(_ db: Database, uid: String) throws -> Int64 {
        try peripheral(db, uid: uid).id
    }

    /// The peripheral's row id and the device part of its samples' dedup keys.
    static func peripheral(_ db: Database, uid: String) throws -> (id: Int64, device: String) {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, identityAddress FROM peripheral WHERE uid = ?"), arguments: [uid]) else {
            throw HealthStoreError.unknownPeripheral(uid: uid)
        }
        return (row["id"], HealthDedupKey.deviceName(identityAddress: row["identityAddress"], peripheralUid: uid))
    }

    struct StoredCursor {
        var id: Int64
        var rule: HealthCursorRule.Stored
    }

    static func latestCursor(_ db: Database, peripheralId: Int64, stream: HealthRecordStream) throws -> StoredCursor? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: """
                SELECT id, epoch, positionKind, position FROM healthIngestCursor
                WHERE peripheralId = ? AND characteristic = ? AND ifnull(userIndex, -1) = ifnull(?, -1)
                ORDER BY epoch DESC LIMIT 1
                """),
            arguments: [peripheralId, stream.characteristic, stream.userIndex])
        guard let row else { return nil }
        guard let kind = HealthCursorKind(rawValue: row["positionKind"]) else { throw StoreError(.corrupt, "healthIngestCursor.positionKind") }
        return StoredCursor(id: row["id"], rule: HealthCursorRule.Stored(epoch: row["epoch"], kind: kind, position: row["position"]))
    }

    private static func insertCursor(_ db: Database, peripheralId: Int64, move: HealthCursorMove, epoch: Int64, reason: HealthEpochReason, now: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO healthIngestCursor (peripheralId, characteristic, userIndex, epoch, positionKind, position, startReason, startedAt, updatedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [peripheralId, move.stream.characteristic, move.stream.userIndex, epoch, move.kind.rawValue, move.position, reason.rawValue, now, now])
    }
}

extension WriteContext {
    /// A fresh UUIDv7 (lowercase text) for a health sample or tombstone, from the transaction's instant and seed.
    mutating func nextSampleUID() -> String { UUIDv7.lowercaseString(nextCommandID()) }
}

/// A health ingest batch in the shared group commit. Its outcome is itself a result: a refusal rolls back only this
/// batch (its savepoint) and reaches the lane typed, while the group's other batches commit.
struct HealthIngestWork: GroupCommitWork {
    let store: HealthStore
    let batch: HealthIngestBatch

    func apply(in db: Database, context: inout WriteContext) throws -> Result<HealthIngestOutcome, HealthStoreError> {
        try HealthStore.refusable(db) { try store.ingest(batch, in: db, context: &context) }
    }
}

struct HealthChangeWork: GroupCommitWork {
    let store: HealthStore
    let change: HealthChange

    func apply(in db: Database, context: inout WriteContext) throws -> Result<HealthChangeOutcome, HealthStoreError> {
        try HealthStore.refusable(db) { try store.apply(change, in: db, context: &context) }
    }
}
