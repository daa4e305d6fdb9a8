import TetherStore

/// The parts of the store the gateway writes and reads: events through the group committer (ACK after a durable
/// commit), desired settings, the registry of addresses and pairing states,
/// and the peripheral registry.
public struct GatewayStorage: Sendable {
    public let database: GatewayDatabase
    public let consumption: ConsumptionService
    public let settings: DeviceSettingsService
    public let registry: DeviceRegistry
    /// Every peripheral whatever its kind: identity address, kinds, Device Information.
    public let peripherals: PeripheralRegistry
    public let committer: GroupCommitter

    /// Pass the daemon's `GroupCommitter` if it has one; otherwise one is made (one per database is enough).
    public init(database: GatewayDatabase, committer: GroupCommitter? = nil) {
        self.database = database
        let consumption = ConsumptionService(database: database)
        self.consumption = consumption
        settings = DeviceSettingsService(database: database)
        registry = DeviceRegistry(database: database)
        peripherals = PeripheralRegistry(database: database)
        self.committer = committer ?? GroupCommitter(service: consumption)
    }
}
