import Foundation
import GRDB
import LinkProtocol

/// The one owner of Tether's database connection. Every read and write of the gateway's durable state goes
/// through it; the services in this module (`ConsumptionService`, `Outbox`, `DeviceSettingsService`, …) are thin
/// views over it whose write methods are invariant-preserving transactions.
///
/// The daemon opens a `DatabasePool` in WAL mode: one writer, concurrent readers (the CLI, status queries) that
/// never block it. Tests may use `inMemory()`.
///
/// ## Durability: `synchronous = FULL`
///
/// Tether acknowledges an event to the device only after the transaction that stored it is durable (§8.2); the
/// device then forgets the event. In WAL mode SQLite offers two useful settings:
///
/// - `NORMAL` syncs the WAL only at checkpoints. A commit is atomic and consistent, but the last transactions
///   before a power loss or kernel crash can roll back. Each of those transactions was already ACKed, and the
///   device has deleted the events: they would be lost for good, which breaks Tether's first promise.
/// - `FULL` syncs the WAL at every commit, so a transaction that returned is on stable storage.
///
/// So the store runs with `FULL`. The cost is one `fsync` per commit, which `GroupCommitter` amortises by
/// committing the batches of every connected device in one transaction (docs/design/store.md has the measurements).
/// A process crash (SIGKILL) loses nothing under either setting; only power loss tells them apart.
public final class GatewayDatabase: Sendable {
    public struct Configuration: Sendable {
        public enum Synchronous: String, Sendable {
            /// Every commit is on stable storage when it returns. The only setting that keeps §8.2.
            case full = "FULL"
            /// For measurements only (the benchmark compares it with `full`): commits can roll back on power loss.
            case normal = "NORMAL"

            /// The value `PRAGMA synchronous` reads back.
            var level: Int {
                switch self {
                case .full: 2
                case .normal: 1
                }
            }
        }

        public var synchronous: Synchronous = .full
        /// How long a connection waits for a lock held by another process (the CLI) before failing.
        public var busyTimeout: Duration = .seconds(5)
        /// Database size cap and free-disk floor, checked before every group commit (§8.10).
        public var limits = StorageLimits()
        /// Opens without writing anything, not even migrations (the CLI reading a live daemon's database); the
        /// schema must be exactly the one this version knows.
        public var readOnly = false
        /// `PRAGMA max_page_count` on every connection: makes SQLite itself return SQLITE_FULL at that size.
        /// Tests use a tiny value to prove that nothing is acknowledged without storage.
        public var maximumPageCount: Int?
        /// `PRAGMA wal_autocheckpoint` on the writer: the WAL size in pages at which a commit also checkpoints,
        /// waiting for the copy and the database file's fsync. `runCheckpoints` keeps the WAL far below this, off
        /// the commit path; the writer's own checkpoint is the fallback that bounds the WAL (16 MiB of 4 KiB pages)
        /// should the background one not run or not keep up. `nil` keeps SQLite's 1000.
        public var walAutocheckpointPages: Int? = 4096
        /// Reader connections the pool may hold open at once (GRDB's default is 5). tetherd's reads are short
        /// (status, the samplers, sync's queries), and every reader that was ever opened stays open with its own
        /// page cache, so a few are enough.
        public var maximumReaderCount = 3
        /// `PRAGMA cache_size` of each reader connection, in KiB (`nil`: SQLite's default, 2,000 KiB). A reader's
        /// cache fills with the pages its queries touch and keeps them, so as the database grows past it each
        /// reader's share of tetherd's memory creeps up to this bound: the slow rise the two-hour soak measured
        /// (docs/measurements/durability.md). The writer keeps SQLite's default: the commit path is the one that
        /// gains from a warm cache (its B-tree interior pages).
        public var readerCacheKiB: Int? = 512

        public init() {}
    }

    /// The file, or `nil` for an in-memory database.
    public let path: String?
    public let configuration: Configuration
    private let writer: any DatabaseWriter
    /// A connection of its own for WAL checkpoints, so that they never run inside a commit (file only).
    private let checkpointer: DatabaseQueue?
    /// Set while `transaction(_:)` runs its body: the thread running it and its connection.
    private let openTransaction = Locked<(thread: pthread_t, database: Unmanaged<Database>)?>(nil)

    /// Opens (creating if needed) the database file and brings its schema up to date.
    public init(path: String, configuration: Configuration = Configuration()) throws(StoreError) {
        self.path = path
        self.configuration = configuration
        do {
            let pool = try DatabasePool(path: path, configuration: Self.grdbConfiguration(configuration))
            if !configuration.readOnly {
                // GRDB's pool switches its writer to `synchronous = NORMAL` when it enables WAL, after
                // `prepareDatabase` ran: the setting must be applied again, on the writer, and checked.
                try pool.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA synchronous = \(configuration.synchronous.rawValue)")
                    let level = try Int.fetchOne(db, sql: "PRAGMA synchronous")
                    guard level == configuration.synchronous.level else {
                        throw StoreError(.other, "the writer runs with synchronous=\(level.map(String.init) ?? "?"), not \(configuration.synchronous.rawValue)")
                    }
                }
                try Migrations.migrator.migrate(pool)
            } else {
                // A reader (the CLI) cannot migrate: it must find the schema it knows.
                let known = try pool.read { db in try Migrations.migrator.hasCompletedMigrations(db) && !Migrations.migrator.hasBeenSuperseded(db) }
                guard known else {
                    throw StoreError(.invalidRequest, "\(path) has a schema this version does not know; the daemon migrates it when it opens it")
                }
            }
            writer = pool
            checkpointer = configuration.readOnly ? nil : try DatabaseQueue(path: path, configuration: Self.grdbConfiguration(configuration))
        } catch {
            throw StoreError(error)
        }
    }

    private init(inMemory configuration: Configuration) throws(StoreError) {
        self.path = nil
        self.configuration = configuration
        self.checkpointer = nil
        do {
            writer = try DatabaseQueue(configuration: Self.grdbConfiguration(configuration))
            try Migrations.migrator.migrate(writer)
        } catch {
            throw StoreError(error)
        }
    }

    /// A private in-memory database with the full schema (tests, dry runs). Nothing in it is durable.
    public static func inMemory(configuration: Configuration = Configuration()) throws(StoreError) -> GatewayDatabase {
        try GatewayDatabase(inMemory: configuration)
    }

    private static func grdbConfiguration(_ configuration: Configuration) -> GRDB.Configuration {
        var grdb = GRDB.Configuration()
        grdb.label = "tether"
        grdb.foreignKeysEnabled = true
        grdb.readonly = configuration.readOnly
        grdb.busyMode = .timeout(TimeInterval(configuration.busyTimeout.nanoseconds) / 1e9)
        let synchronous = configuration.synchronous.rawValue
        let maximumPageCount = configuration.maximumPageCount
        let walAutocheckpointPages = configuration.walAutocheckpointPages
        let readerCacheKiB = configuration.readerCacheKiB
        grdb.maximumReaderCount = max(1, configuration.maximumReaderCount)
        grdb.prepareDatabase { db in
            // Per connection; see the type's documentation for why FULL.
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            if let maximumPageCount { try db.execute(sql: "PRAGMA max_page_count = \(maximumPageCount)") }
            if let walAutocheckpointPages { try db.execute(sql: "PRAGMA wal_autocheckpoint = \(walAutocheckpointPages)") }
            // DatabasePool opens its readers with a read-only configuration; the writer and a queue are not.
            if let readerCacheKiB, db.configuration.readonly {
                // A negative cache_size is a size in KiB, not pages (https://sqlite.org/pragma.html#pragma_cache_size).
                try db.execute(sql: "PRAGMA cache_size = -\(max(64, readerCacheKiB))")
            }
        }
        return grdb
    }

    // MARK: - One transaction across services

    /// Runs `body` in ONE write transaction: every call `body` makes on this database's services (on this
    /// thread) joins it, reads see its writes, and a throw rolls all of it back. For writes that must be atomic
    /// across services, such as the sync engine applying a pulled page and moving the feed cursor past it.
    ///
    /// `body` blocks the writer: keep it to store calls, no I/O. Each service call inside is a savepoint, so a
    /// call that fails undoes only itself if `body` catches the error.
    @discardableResult
    public func transaction<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try write { db in
                // A transaction inside another joins it (as a savepoint) and leaves it open when it ends.
                let outer = openTransaction.withLock { open in
                    defer { open = (pthread_self(), Unmanaged.passUnretained(db)) }
                    return open
                }
                defer { openTransaction.withLock { $0 = outer } }
                return try body()
            }
        } catch {
            throw StoreError(error)
        }
    }

    /// The connection of the transaction `transaction(_:)` has open, when the caller runs inside it.
    private func joinedTransaction() -> Database? {
        openTransaction.withLock { open in
            guard let open, pthread_equal(open.thread, pthread_self()) != 0 else { return nil }
            return open.database.takeUnretainedValue()
        }
    }

    // MARK: - Access for this module's services

    @discardableResult
    func write<T>(_ updates: (Database) throws -> T) throws(StoreError) -> T {
        do {
            if let db = joinedTransaction() {
                var result: T?
                try db.inSavepoint {
                    result = try updates(db)
                    return .commit
                }
                return result!
            }
            return try writer.write(updates)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(error)
        }
    }

    func read<T>(_ value: (Database) throws -> T) throws(StoreError) -> T {
        do {
            // Inside `transaction(_:)`, a read must see the transaction's own writes: read on its connection.
            if let db = joinedTransaction() { return try value(db) }
            return try writer.read(value)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(error)
        }
    }

    /// Schedules `updates` on the writer's serial queue, outside any transaction (the group committer opens its
    /// own). Blocks run in the order they were scheduled, interleaved fairly with other writes.
    func asyncWriteWithoutTransaction(_ updates: @escaping @Sendable (Database) -> Void) {
        writer.asyncWriteWithoutTransaction(updates)
    }

    // MARK: - WAL checkpoints

    /// Copies committed WAL frames into the database file (PASSIVE: it waits for no reader and no writer, and
    /// the writer keeps committing meanwhile). Returns the WAL's frames and how many are now in the database
    /// file, `nil` for an in-memory or read-only database.
    @discardableResult
    public func checkpoint() throws(StoreError) -> (walFrames: Int, checkpointedFrames: Int)? {
        guard let checkpointer else { return nil }
        do {
            return try checkpointer.writeWithoutTransaction { db in
                let result = try db.checkpoint(.passive)
                return (result.walFrameCount, result.checkpointedFrameCount)
            }
        } catch {
            throw StoreError(error)
        }
    }

    /// Checkpoints every `interval` until the task is cancelled: the daemon runs this next to its group
    /// committer so that commits, and so ACKs, never wait for a checkpoint. A failed checkpoint is retried at
    /// the next tick (the writer's fallback checkpoint bounds the WAL meanwhile); `onError` hears of it.
    public func runCheckpoints(every interval: Duration = .milliseconds(250), onError: (@Sendable (StoreError) -> Void)? = nil) async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return  // cancelled
            }
            do {
                try checkpoint()
            } catch {
                onError?(error)
            }
        }
    }

    // MARK: - Maintenance and inspection

    /// Migration identifiers applied to this database, oldest first.
    public func appliedMigrations() throws(StoreError) -> [String] {
        try read { db in try Migrations.migrator.appliedIdentifiers(db).sorted() }
    }

    /// `PRAGMA integrity_check` and `foreign_key_check`: empty when the file is sound.
    public func integrityProblems() throws(StoreError) -> [String] {
        try read { db in
            var problems = try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" }
            for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") {
                problems.append("foreign key: \(row)")
            }
            return problems
        }
    }

    /// `PRAGMA synchronous` and `journal_mode` of the connection that commits: what durability actually is.
    public func writerDurability() throws(StoreError) -> (synchronous: Int, journalMode: String) {
        try write { db in
            (try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1, try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "?")
        }
    }

    /// Bytes in use by the main database file (`page_count · page_size`), which the size cap limits.
    public func databaseSize() throws(StoreError) -> Int64 {
        try read { db in try StorageGuard.databaseBytes(db) }
    }
}
