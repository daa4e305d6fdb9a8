import Foundation
import LinkProtocol
import TetherStore
import TetherPrimitives

/// The store as tetherd's control API and metrics use it: one place that holds the services over the daemon's
/// `GatewayDatabase` and the group committer, and answers in store types.
public struct StoreQueries: Sendable {
    public let database: GatewayDatabase
    public let committer: GroupCommitter
    public let outbox: Outbox
    public let registry: DeviceRegistry
    public let settings: DeviceSettingsService
    public let consumption: ConsumptionService
    let clock: @Sendable () -> Timestamp

    public init(database: GatewayDatabase, committer: GroupCommitter, consumption: ConsumptionService, clock: @escaping @Sendable () -> Timestamp = WallClock.now) {
        self.database = database
        self.committer = committer
        self.consumption = consumption
        self.outbox = Outbox(database: database)
        self.registry = DeviceRegistry(database: database)
        self.settings = DeviceSettingsService(database: database)
        self.clock = clock
    }

    public var now: Timestamp { clock() }

    public struct Summary: Hashable, Sendable {
        public var outbox: OutboxCounts
        public var oldestPendingAgeNanoseconds: Int64?
        public var conflicts: Int
        public var databaseBytes: Int64
        public var eventsStored: Int
        public var devicesKnown: Int
        public var storageAccepting: Bool
        public var storageState: String
        /// What SQLite holds in tetherd's memory (page caches, statements); `nil` without memory statistics.
        public var sqliteHeap: SQLiteHeap?
        /// Health samples and tombstones not yet uploaded, by upload state.
        public var healthBacklog: HealthUploadBacklog
    }

    public func summary() throws(StoreError) -> Summary {
        let now = clock()
        let counts = try outbox.counts()
        let age = try outbox.oldestPendingAge(now: now)
        let conflicts = try settings.conflicts().reduce(0) { $0 + $1.conflicts.count }
        let storageState: String
        let accepting: Bool
        switch committer.storageStatus {
        case .accepting:
            accepting = true
            storageState = "ok"
        case .refusing:
            accepting = false
            storageState = "full"
        }
        return Summary(
            outbox: counts, oldestPendingAgeNanoseconds: age.map { $0.nanoseconds },
            conflicts: conflicts, databaseBytes: try database.databaseSize(),
            eventsStored: try consumption.eventCount(), devicesKnown: try registry.devices().count,
            storageAccepting: accepting, storageState: storageState, sqliteHeap: SQLiteHeap.current(),
            healthBacklog: try HealthUploadQueue(database: database).backlog())
    }

    /// A device by serial, else by BLE address (case-insensitive).
    public func device(serialOrAddress identifier: String) throws(StoreError) -> DeviceRecord? {
        if let device = try registry.device(serial: identifier) { return device }
        return try registry.device(address: identifier.uppercased())
    }
}

