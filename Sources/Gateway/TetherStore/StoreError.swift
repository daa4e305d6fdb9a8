import GRDB
import LinkProtocol

/// Why the store did not do what it was asked. Equal by code; `reason` is for people.
///
/// SQLite's result codes are mapped here and nowhere else. Every code that means "the gateway cannot store right
/// now" leads to the same place: the batch is not acknowledged and the device keeps its frames (§8.10).
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The database reached its configured size cap (`StorageLimits.maximumDatabaseBytes`).
        case databaseCapReached
        /// The file system's free space fell below the configured floor (`StorageLimits.minimumFreeDiskBytes`).
        case diskFloorReached
        /// SQLITE_FULL: the disk or `max_page_count` is exhausted.
        case diskFull
        /// SQLITE_IOERR and its extended codes, SQLITE_CANTOPEN.
        case ioError
        /// SQLITE_READONLY: the file system went read-only (ext4 `errors=remount-ro`) or the file is read-only.
        case readOnly
        /// SQLITE_CORRUPT, SQLITE_NOTADB.
        case corrupt
        /// SQLITE_BUSY / SQLITE_LOCKED after the busy timeout.
        case busy
        /// A NOT NULL, UNIQUE, CHECK or foreign-key constraint refused a row: a bug in the caller or here.
        case constraint
        /// The caller asked for something the store's rules forbid (an invalid setting, an impossible outbox
        /// sequence such as update after delete).
        case invalidRequest
        /// The named row does not exist.
        case notFound
        /// The outbox lease presented is no longer held (it expired and the command was claimed again).
        case leaseLost
        /// Something already in progress holds what the caller asked for (a device's unfinished firmware update).
        case conflict
        case other
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// Classifies any error thrown by GRDB or this module.
    public init(_ error: any Error) {
        if let error = error as? StoreError {
            self = error
            return
        }
        guard let error = error as? DatabaseError else {
            self.init(.other, "\(error)")
            return
        }
        let reason = error.message.map { "\(error.resultCode): \($0)" } ?? "\(error.resultCode)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_FULL: self.init(.diskFull, reason)
        case .SQLITE_IOERR, .SQLITE_CANTOPEN: self.init(.ioError, reason)
        case .SQLITE_READONLY: self.init(.readOnly, reason)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: self.init(.corrupt, reason)
        case .SQLITE_BUSY, .SQLITE_LOCKED: self.init(.busy, reason)
        case .SQLITE_CONSTRAINT: self.init(.constraint, reason)
        default: self.init(.other, reason)
        }
    }

    /// Whether the error concerns the storage as a whole rather than the content of one batch. Such an error
    /// fails a whole group commit (SQLite may already have rolled the transaction back); any other error fails
    /// only the batch that caused it.
    public var isStorageCondition: Bool {
        switch code {
        case .databaseCapReached, .diskFloorReached, .diskFull, .ioError, .readOnly, .corrupt, .busy: true
        case .constraint, .invalidRequest, .notFound, .leaseLost, .conflict, .other: false
        }
    }

    /// What the link session hears (§8.10): whatever the cause, the device keeps the frames and retries later.
    public var storageFailure: StorageFailure { .storageFull }

    public var description: String { "\(code.rawValue): \(reason)" }

    public static func == (a: StoreError, b: StoreError) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
