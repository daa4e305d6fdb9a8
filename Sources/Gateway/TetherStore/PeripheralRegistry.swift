import GRDB
import TetherPrimitives

/// Every BLE peripheral the gateway has met, whatever its kind: its gateway-assigned id, its identity address,
/// the kinds of session the gateway runs on it (or the services it offered when none matched) and what it says
/// about itself (Device Information Service). A Tether link device's own record (`device`) is linked here by
/// `DeviceRegistry.recordAddress`.
public struct PeripheralRegistry: Sendable {
    public let database: GatewayDatabase

    public init(database: GatewayDatabase) { self.database = database }

    public func peripheral(identityAddress: String) throws(StoreError) -> PeripheralRecord? {
        try database.read { db in try Self.fetch(db, identityAddress: identityAddress) }
    }

    public func peripheral(uid: String) throws(StoreError) -> PeripheralRecord? {
        try database.read { db in try PeripheralRecord.filter(PeripheralRecord.Columns.uid == uid).fetchOne(db) }
    }

    public func peripherals() throws(StoreError) -> [PeripheralRecord] {
        try database.read { db in try PeripheralRecord.order(PeripheralRecord.Columns.id).fetchAll(db) }
    }

    /// The peripheral at `identityAddress`, created (with a new uid) the first time the gateway meets it.
    @discardableResult
    public func register(
        identityAddress: String, at now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws(StoreError) -> PeripheralRecord {
        let seed = random.next()
        return try database.write { db in
            var random = SplitMix64(seed: seed)
            return try Self.registered(db, identityAddress: identityAddress, at: now, using: &random)
        }
    }

    /// The identity addresses of the peripherals the gateway has adopted and not forgotten, oldest first.
    public func adoptedAddresses() throws(StoreError) -> [String] {
        try database.read { db in
            try String.fetchAll(
                db,
                PeripheralRecord.select(PeripheralRecord.Columns.identityAddress)
                    .filter(PeripheralRecord.Columns.adoptedAt != nil && PeripheralRecord.Columns.identityAddress != nil)
                    .order(PeripheralRecord.Columns.adoptedAt, PeripheralRecord.Columns.id))
        }
    }

    /// Records that the gateway adopted the bonded peripheral at `identityAddress` (`adopted`), or forgot it: a
    /// durable write, made before the pairing is reported done, so a gateway that restarts at any moment after
    /// still wants the device. Adopting again keeps the first instant.
    public func setAdopted(
        _ adopted: Bool, identityAddress: String, at now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws(StoreError) {
        let seed = random.next()
        try database.write { db in
            if !adopted, try Self.fetch(db, identityAddress: identityAddress) == nil { return }
            var random = SplitMix64(seed: seed)
            var peripheral = try Self.registered(db, identityAddress: identityAddress, at: now, using: &random)
            if adopted {
                peripheral.adoptedAt = peripheral.adoptedAt ?? now.nanoseconds
            } else {
                peripheral.adoptedAt = nil
            }
            try peripheral.update(db)
        }
    }

    /// The kinds decided from the device's services. Without a primary kind the device is unsupported, and the
    /// services it offered are recorded so a technician can see why; with one, an earlier such verdict is cleared.
    public func recordClassification(
        kinds: [PeripheralKind], services: [String], identityAddress: String, at now: Timestamp,
        using random: inout some RandomNumberGenerator
    ) throws(StoreError) {
        let seed = random.next()
        try database.write { db in
            var random = SplitMix64(seed: seed)
            var peripheral = try Self.registered(db, identityAddress: identityAddress, at: now, using: &random)
            peripheral.kinds = Array(Set(kinds)).sorted()
            peripheral.unsupportedServices = kinds.contains(where: \.isPrimary) ? nil : services.sorted()
            peripheral.lastSeenAt = max(peripheral.lastSeenAt, now.nanoseconds)
            try peripheral.update(db)
        }
    }

    /// What the device's Device Information Service said; fields it did not offer stay as they were.
    public func recordDeviceInformation(
        _ information: DeviceInformation, identityAddress: String, at now: Timestamp,
        using random: inout some RandomNumberGenerator
    ) throws(StoreError) {
        let seed = random.next()
        try database.write { db in
            var random = SplitMix64(seed: seed)
            var peripheral = try Self.registered(db, identityAddress: identityAddress, at: now, using: &random)
            var merged = peripheral.deviceInformation
            merged.manufacturerName = information.manufacturerName ?? merged.manufacturerName
            merged.modelNumber = information.modelNumber ?? merged.modelNumber
            merged.serialNumber = information.serialNumber ?? merged.serialNumber
            merged.hardwareRevision = information.hardwareRevision ?? merged.hardwareRevision
            merged.firmwareRevision = information.firmwareRevision ?? merged.firmwareRevision
            merged.softwareRevision = information.softwareRevision ?? merged.softwareRevision
            merged.systemId = information.systemId ?? merged.systemId
            merged.pnpId = information.pnpId ?? merged.pnpId
            peripheral.deviceInformation = merged
            peripheral.lastSeenAt = max(peripheral.lastSeenAt, now.nanoseconds)
            try peripheral.update(db)
        }
    }

    // MARK: - Inside a write

    static func fetch(_ db: Database, identityAddress: String) throws -> PeripheralRecord? {
        try PeripheralRecord.filter(PeripheralRecord.Columns.identityAddress == identityAddress).fetchOne(db)
    }

    static func registered(
        _ db: Database, identityAddress: String, at now: Timestamp, using random: inout some RandomNumberGenerator
    ) throws -> PeripheralRecord {
        if let peripheral = try fetch(db, identityAddress: identityAddress) { return peripheral }
        var peripheral = PeripheralRecord(
            uid: UUIDv7.lowercaseString(UUIDv7.make(at: now, using: &random)), identityAddress: identityAddress,
            at: now.nanoseconds)
        try peripheral.insert(db)
        return peripheral
    }

    /// Links the Tether device record `deviceId` to the peripheral at `identityAddress` (and to no other), adding
    /// the `tetherLink` kind: the device announced its serial on that address (§7.2 HELLO).
    static func linkTetherDevice(
        _ db: Database, deviceId: Int64, identityAddress: String, at now: Timestamp,
        using random: inout some RandomNumberGenerator
    ) throws {
        try db.execute(
            sql: "UPDATE peripheral SET linkDeviceId = NULL WHERE linkDeviceId = ? AND identityAddress IS NOT ?",
            arguments: [deviceId, identityAddress])
        var peripheral = try registered(db, identityAddress: identityAddress, at: now, using: &random)
        guard peripheral.linkDeviceId != deviceId || !peripheral.kinds.contains(.tetherLink) else { return }
        peripheral.linkDeviceId = deviceId
        peripheral.kinds = Array(Set(peripheral.kinds + [.tetherLink])).sorted()
        peripheral.unsupportedServices = nil
        peripheral.lastSeenAt = max(peripheral.lastSeenAt, now.nanoseconds)
        try peripheral.update(db)
    }
}
