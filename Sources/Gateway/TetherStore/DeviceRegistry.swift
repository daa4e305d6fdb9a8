import GRDB
import LinkProtocol
import TetherPrimitives

/// The devices the gateway knows: look-ups for the daemon and the CLI, and the two facts that do not come from
/// the link protocol (the BLE address and the pairing state).
public struct DeviceRegistry: Sendable {
    public let database: GatewayDatabase

    public init(database: GatewayDatabase) { self.database = database }

    public func device(serial: String) throws(StoreError) -> DeviceRecord? {
        try database.read { db in try DeviceRecord.filter(DeviceRecord.Columns.serial == serial).fetchOne(db) }
    }

    public func device(address: String) throws(StoreError) -> DeviceRecord? {
        try database.read { db in try DeviceRecord.filter(DeviceRecord.Columns.address == address).fetchOne(db) }
    }

    public func devices() throws(StoreError) -> [DeviceRecord] {
        try database.read { db in try DeviceRecord.order(DeviceRecord.Columns.serial).fetchAll(db) }
    }

    /// Links a BLE address to the serial a device announced on it, in `device` and in the peripheral registry. An
    /// address belongs to one device at a time: a previous holder loses it.
    public func recordAddress(_ address: String, serial: String, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) {
        let seed = random.next()
        let peripheralSeed = random.next()
        try database.write { db in
            var context = WriteContext(now: now, seed: seed)
            var device = try context.device(db, serial: serial)
            if let deviceId = device.id {
                var random = SplitMix64(seed: peripheralSeed)
                try PeripheralRegistry.linkTetherDevice(db, deviceId: deviceId, identityAddress: address, at: now, using: &random)
            }
            guard device.address != address else { return }
            try db.execute(sql: "UPDATE device SET address = NULL WHERE address = ? AND serial <> ?", arguments: [address, serial])
            device.address = address
            try device.update(db, columns: [DeviceRecord.Columns.address])
        }
    }

    /// Pairing is a technician's decision the backend must hear of.
    public func setPairingState(_ state: DeviceRecord.PairingState, serial: String, at now: Timestamp, using random: inout some RandomNumberGenerator) throws(StoreError) {
        let seed = random.next()
        try database.write { db in
            var context = WriteContext(now: now, seed: seed)
            var device = try context.device(db, serial: serial)
            guard device.pairingState != state else { return }
            device.pairingState = state
            try device.update(db, columns: [DeviceRecord.Columns.pairingState])
            try Outbox.enqueue(db, entity: .device(serial: serial), operation: .update, payload: OutboxPayloads.device(device), now: now, id: context.nextCommandID())
        }
    }
}
