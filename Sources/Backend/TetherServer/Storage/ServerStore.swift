import Foundation
import SyncContract

/// The sync backend's storage. Two implementations, `SQLiteServerStore` (the default, one file, no setup) and
/// `PostgresServerStore`, run the same `BatchPlanner` inside their transactions, so their answers are identical;
/// one test suite runs against both.
///
/// Every method is scoped by tenant: the principal's tenant, which comes from the verified token and never from
/// the request body. Writes that append to a tenant's change feed are serialised per tenant, so the feed's
/// sequence numbers commit in order and a cursor never skips a change.
public protocol ServerStore: Sendable {
    /// Brings the schema up to date. Called before the server accepts requests.
    func migrate() async throws

    func insertToken(_ token: TokenRecord) async throws
    func token(id: String) async throws -> TokenRecord?
    /// Marks a token revoked; `false` when there is no such token.
    func revokeToken(id: String, at date: Date) async throws -> Bool
    func tokens() async throws -> [TokenRecord]

    /// Applies one push in one transaction: the idempotency records, the writes and the feed entries commit
    /// together or not at all. Results are in command order.
    func push(_ commands: [PushCommand], by principal: GatewayPrincipal) async throws -> [CommandResult]

    /// Up to `limit` feed entries after `after`, oldest first, with the tenant's head sequence (for `cursor-ahead`).
    func feed(tenant: String, after: Int64, limit: Int) async throws -> FeedSlice

    /// The settings of a device that exists (and is not deleted); `nil` otherwise.
    func settings(tenant: String, serial: String) async throws -> DeviceSettingsResource?

    /// Replaces a device's desired settings (the settings endpoint with If-Match, or the operator).
    func replaceDesiredSettings(
        tenant: String, serial: String, desired: SettingsDocument, author: SettingsChangeAuthor, origin: String?, ifMatch: [Int64]?
    ) async throws -> BatchPlanner.SettingsOutcome

    /// The operator's registry changes: visible to every gateway of the tenant.
    func upsertDevice(tenant: String, _ document: DevicePayload) async throws -> Int64
    func deleteDevice(tenant: String, serial: String) async throws -> Int64?

    func statistics(tenant: String) async throws -> TenantStatistics

    /// The firmware updates the tenant's gateways finished, newest first; of one device (its Bluetooth address) when
    /// `address` is given.
    func firmwareUpdates(tenant: String, address: String?) async throws -> [FirmwareUpdateRow]

    /// Stores health samples in one transaction (`HealthUploadPlanner`'s rules); one result per sample, in order.
    /// `storedAt` is the server's instant, nanoseconds since the Unix epoch.
    func uploadHealthSamples(_ samples: [HealthSampleUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult]

    /// Stores health tombstones in one transaction, marking the samples they name; one result per tombstone, in order.
    func uploadHealthDeletions(_ deletions: [HealthDeletionUpload], by principal: GatewayPrincipal, storedAt: Int64) async throws -> [HealthUploadResult]

    /// The operator deletes a health sample (`HealthSampleDeletion`): the tombstone, the sample's mark and the
    /// change-feed entry for the tenant's gateways (origin none) commit in one transaction, or nothing does.
    func deleteHealthSample(tenant: String, tombstone: HealthDeletionUpload, storedAt: Int64) async throws -> HealthSampleDeletion

    /// The tenant's health samples, deleted ones included, by `effective_at` then uid.
    func healthSamples(tenant: String) async throws -> [HealthSampleRow]

    /// One page of the tenant's undeleted samples for the FHIR export (`HealthExportQuery`: by effective time, then
    /// uid byte by byte), read with the page's bounds in the query.
    func healthExportPage(tenant: String, query: HealthExportQuery) async throws -> HealthExportPage

    /// The tenant's tombstones, by `requested_at` then uid.
    func healthDeletions(tenant: String) async throws -> [HealthDeletionRow]

    /// For each key, in order, the tenant's undeleted samples under it (`HealthProjectionKey`: device uid, user index,
    /// metric, UTC day), read in one snapshot; `HealthRollupCalculation` makes the rollups.
    func healthProjectionInputs(tenant: String, keys: [HealthProjectionKey]) async throws -> [[HealthProjectionInput]]
}

/// Feed entries as stored: the sequence, the gateway that caused them, and the change.
public struct FeedSlice: Sendable {
    public struct Entry: Sendable {
        public var sequence: Int64
        public var origin: String?
        public var change: Change
    }

    public var entries: [Entry]
    /// The highest sequence the tenant's feed holds (0 when empty).
    public var head: Int64
}

/// The store's disk is full (SQLite's SQLITE_FULL): the transaction was rolled back, nothing of the request was
/// applied. Answered as 503 `unavailable` with Retry-After, not as a 500: a gateway counts a 500 as an attempt
/// against each command and dead-letters it after `OutboxPolicy.maximumAttempts`, while a 503 is a link failure
/// that sends the commands back to its queue untouched (TetherSync's `SyncFailure.isLinkFailure`). A full disk is
/// the server's condition, not the commands' fault: they must wait, not die.
public struct StorageFull: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) { self.description = description }
}

/// The store's database is not serving (PostgreSQL shut down, restarting after a crash, the connection lost): answered
/// as 503 `unavailable` with Retry-After, like `StorageFull` and for the same reason (PostgresFailure).
public struct StorageUnavailable: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) { self.description = description }
}

/// A stored row the server cannot read back: a bug or a hand-edited database, reported as a 500.
public struct StorageCorruption: Error, CustomStringConvertible {
    public var description: String
}
