import Foundation
import GRDB
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("Peripheral registry: one row per device whatever its kind")
struct PeripheralRegistryTests {
    let now = Timestamp(nanoseconds: 1_793_520_000_000_000_000)

    @Test("a peripheral is registered once per identity address, with a stable gateway-assigned uid")
    func registerOnce() throws {
        let database = try GatewayDatabase.inMemory()
        let registry = PeripheralRegistry(database: database)
        var random = SplitMix64(seed: 7)
        let first = try registry.register(identityAddress: "C0:00:00:00:00:01", at: now, using: &random)
        let again = try registry.register(identityAddress: "C0:00:00:00:00:01", at: now.advanced(by: .seconds(5)), using: &random)
        let other = try registry.register(identityAddress: "C0:00:00:00:00:02", at: now, using: &random)
        #expect(first.uid == again.uid && first.id == again.id)
        #expect(first.uid != other.uid)
        #expect(try registry.peripheral(uid: first.uid)?.identityAddress == "C0:00:00:00:00:01")
        #expect(try registry.peripherals().count == 2)
    }

    @Test("kinds, an unsupported verdict with the services offered, and Device Information are recorded")
    func classificationAndDeviceInformation() throws {
        let database = try GatewayDatabase.inMemory()
        let registry = PeripheralRegistry(database: database)
        var random = SplitMix64(seed: 8)
        let address = "C0:00:00:00:00:03"
        let services = ["0000180a-0000-1000-8000-00805f9b34fb", "00001810-0000-1000-8000-00805f9b34fb"]
        try registry.recordClassification(kinds: [], services: services, identityAddress: address, at: now, using: &random)
        var peripheral = try #require(try registry.peripheral(identityAddress: address))
        #expect(peripheral.kinds.isEmpty)
        #expect(peripheral.unsupportedServices == services.sorted())

        try registry.recordDeviceInformation(
            DeviceInformation(manufacturerName: "ACME", modelNumber: "BP-7", systemId: "0011223344556677"),
            identityAddress: address, at: now, using: &random)
        let pnp = PnPID(vendorIdSource: .usbImplementersForum, vendorId: 0x1D6B, productId: 1, productVersion: 0x0210)
        try registry.recordDeviceInformation(
            DeviceInformation(firmwareRevision: "2.1.0", pnpId: pnp), identityAddress: address, at: now, using: &random)
        try registry.recordClassification(kinds: [.tetherLink], services: services, identityAddress: address, at: now, using: &random)
        peripheral = try #require(try registry.peripheral(identityAddress: address))
        #expect(peripheral.kinds == [.tetherLink])
        #expect(peripheral.unsupportedServices == nil)
        #expect(peripheral.deviceInformation == DeviceInformation(
            manufacturerName: "ACME", modelNumber: "BP-7", firmwareRevision: "2.1.0", systemId: "0011223344556677", pnpId: pnp))
        // A PnP ID is whole or absent, whatever code writes the row.
        #expect(throws: StoreError.self) {
            try database.write { db in try db.execute(sql: "UPDATE peripheral SET pnpProductId = NULL") }
        }
        #expect(throws: StoreError.self) {
            try database.write { db in
                try db.execute(sql: """
                    INSERT INTO peripheral (uid, identityAddress, firstSeenAt, lastSeenAt, pnpVendorIdSource)
                    VALUES ('0190a000-0000-7000-8000-0000000000ff', 'C0:00:00:00:00:09', 0, 0, 1)
                    """)
            }
        }
    }

    @Test("a Tether device's serial links its device record to the peripheral at its address, and moves with it")
    func tetherDeviceLink() throws {
        let database = try GatewayDatabase.inMemory()
        let devices = DeviceRegistry(database: database)
        let registry = PeripheralRegistry(database: database)
        var random = SplitMix64(seed: 9)
        try devices.recordAddress("C0:00:00:00:00:04", serial: "TS1", at: now, using: &random)
        let device = try #require(try devices.device(serial: "TS1"))
        var peripheral = try #require(try registry.peripheral(identityAddress: "C0:00:00:00:00:04"))
        #expect(peripheral.linkDeviceId == device.id)
        #expect(peripheral.kinds == [.tetherLink])

        // The same serial on another address (a replaced radio board): the link moves, the old peripheral keeps its row.
        try devices.recordAddress("C0:00:00:00:00:05", serial: "TS1", at: now, using: &random)
        peripheral = try #require(try registry.peripheral(identityAddress: "C0:00:00:00:00:04"))
        #expect(peripheral.linkDeviceId == nil)
        #expect(try registry.peripheral(identityAddress: "C0:00:00:00:00:05")?.linkDeviceId == device.id)
    }

    @Test("the constraints refuse bad peripheral rows")
    func constraints() throws {
        let database = try GatewayDatabase.inMemory()
        let uid = "0190a000-0000-7000-8000-000000000001"
        for sql in [
            "INSERT INTO peripheral (uid, firstSeenAt, lastSeenAt) VALUES ('\(uid)', 1, 1)",  // neither address nor link
            "INSERT INTO peripheral (uid, identityAddress, firstSeenAt, lastSeenAt) VALUES ('short', 'C0:00:00:00:00:01', 1, 1)",
            "INSERT INTO peripheral (uid, identityAddress, kinds, firstSeenAt, lastSeenAt) VALUES ('\(uid)', 'C0:00:00:00:00:01', '{}', 1, 1)",
            "INSERT INTO peripheral (uid, identityAddress, firstSeenAt, lastSeenAt) VALUES ('\(uid)', 'C0:00:00:00:00:01', 2, 1)",
            "INSERT INTO peripheral (uid, linkDeviceId, firstSeenAt, lastSeenAt) VALUES ('\(uid)', 999, 1, 1)",
        ] {
            #expect(throws: StoreError.self, "\(sql)") { try database.write { db in try db.execute(sql: sql) } }
        }
    }
}
