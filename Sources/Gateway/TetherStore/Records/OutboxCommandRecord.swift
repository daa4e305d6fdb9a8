import Foundation
import GRDB

/// A row of `outboxCommand`: one change the backend must hear of, exactly once (docs/design/store.md, "Outbox").
public struct OutboxCommandRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "outboxCommand"
    public static func databaseUUIDEncodingStrategy(for column: String) -> DatabaseUUIDEncodingStrategy { .lowercaseString }

    public enum Operation: String, Codable, Hashable, Sendable, CaseIterable, DatabaseValueConvertible {
        case create, update, delete
    }

    public enum Status: String, Codable, Hashable, Sendable, CaseIterable, DatabaseValueConvertible {
        /// Waiting to be claimed once `nextAttemptAt` has passed.
        case pending
        /// Claimed by a pusher until `leaseExpiresAt`; returns to `pending` if the lease runs out.
        case inProgress = "in_progress"
        /// The last attempt failed transiently; claimed again after the backoff in `nextAttemptAt`.
        case failed
        /// The backend refused it as conflicting with its state. Needs a decision: `retry` or `discard`.
        case conflict
        /// Gave up after the policy's attempts, or the backend rejected it for good. Needs `retry` or `discard`.
        case deadLetter = "dead_letter"
    }

    /// Enqueue order: commands of one entity are pushed strictly in this order.
    public var seq: Int64?
    /// UUIDv7: the idempotency key the backend deduplicates on.
    public var id: UUID
    public var entityType: OutboxEntity.Kind
    public var entityId: String
    public var operation: Operation
    /// JSON: the entity's full state for create and update, its identity for delete.
    public var payload: String
    public var status: Status
    /// Claims so far (a claim whose lease expired counts: the push may have reached the backend).
    public var attempts: Int
    public var nextAttemptAt: Int64
    /// When the command first left the gateway. From then on the backend may have seen its id, so the command
    /// is never rewritten by coalescing.
    public var firstAttemptAt: Int64?
    public var leaseToken: String?
    public var leaseExpiresAt: Int64?
    public var lastError: String?
    public var createdAt: Int64
    public var updatedAt: Int64

    public var entity: OutboxEntity? { OutboxEntity(kind: entityType, id: entityId) }

    public enum Columns {
        public static let seq = Column(CodingKeys.seq)
        public static let id = Column(CodingKeys.id)
        public static let entityType = Column(CodingKeys.entityType)
        public static let entityId = Column(CodingKeys.entityId)
        public static let operation = Column(CodingKeys.operation)
        public static let payload = Column(CodingKeys.payload)
        public static let status = Column(CodingKeys.status)
        public static let attempts = Column(CodingKeys.attempts)
        public static let nextAttemptAt = Column(CodingKeys.nextAttemptAt)
        public static let firstAttemptAt = Column(CodingKeys.firstAttemptAt)
        public static let leaseToken = Column(CodingKeys.leaseToken)
        public static let leaseExpiresAt = Column(CodingKeys.leaseExpiresAt)
        public static let lastError = Column(CodingKeys.lastError)
        public static let createdAt = Column(CodingKeys.createdAt)
        public static let updatedAt = Column(CodingKeys.updatedAt)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { seq = inserted.rowID }
}
