import BlueZSimulator
import DBus
import Foundation
import HealthDeviceModel
import Testing
import TetherTestSupport

/// Standard health devices on the simulated bluetoothd: the GATT tree, security, RACP over D-Bus with its faults,
/// and the stale bond after a device reset.
@Suite(.serialized)
struct SimulatedHealthDeviceTests {
    static let meter: DBusObjectPath = "/org/bluez/hci0/dev_C0_48_45_00_00_01"
    // Glucose service at 0x0010: 0x2A18 at 0x0011, 0x2A34 at 0x0014, 0x2A51 at 0x0017, RACP at 0x001a.
    static let measurement: DBusObjectPath = "/org/bluez/hci0/dev_C0_48_45_00_00_01/service0010/char0011"
    static let context: DBusObjectPath = "/org/bluez/hci0/dev_C0_48_45_00_00_01/service0010/char0014"
    static let racp: DBusObjectPath = "/org/bluez/hci0/dev_C0_48_45_00_00_01/service0010/char001a"
    static let characteristic = "org.bluez.GattCharacteristic1"

    static func configuration(records: Int = 6) -> SimulatorConfiguration {
        var meter = DeviceConfiguration(address: "C0:48:45:00:00:01")
        meter.name = "Sim-Glucose"
        var settings = HealthDeviceSettings(kind: .glucose)
        settings.storedRecords = records
        settings.contextEvery = 0
        meter.health = settings
        meter.tetherService = false
        return SimulatorConfiguration(devices: [meter], seed: 5)
    }

    static func values(_ recorder: SignalRecorder, at path: DBusObjectPath) -> [[UInt8]] {
        recorder.signals.filter { $0.path == path }.compactMap { $0.changedProperties?["Value"]?.bytesValue }
    }

    func pairAndSubscribe(_ harness: SimulatorHarness) async throws {
        try await harness.discover(Self.meter)
        try await harness.connect(Self.meter)
        _ = try await harness.bluez(Self.meter, "org.bluez.Device1", "Pair")
        for path in [Self.measurement, Self.racp] {
            _ = try await harness.bluez(path, Self.characteristic, "StartNotify")
        }
    }

    func writeRACP(_ harness: SimulatorHarness, _ bytes: [UInt8]) async throws {
        _ = try await harness.bluez(
            Self.racp, Self.characteristic, "WriteValue", [.bytes(bytes), .variantDictionary(["type": .string("request")])])
    }

    @Test func glucoseTreeAndSecurity() async throws {
        try await SimulatorHarness.with(Self.configuration()) { harness in
            try await harness.discover(Self.meter)
            #expect(try await harness.property(Self.meter, "org.bluez.Device1", "UUIDs")?.stringsValue
                == ["00001808-0000-1000-8000-00805f9b34fb"])
            try await harness.connect(Self.meter)
            let objects = try await harness.managedObjects()
            #expect(objects[Self.racp.rawValue]?[Self.characteristic]?["UUID"]?.unwrappingVariants
                == .string("00002a52-0000-1000-8000-00805f9b34fb"))
            // Indicate-only RACP has no NotifyAcquired (bleak then uses StartNotify); notify-only 0x2A18 has one.
            #expect(objects[Self.racp.rawValue]?[Self.characteristic]?["NotifyAcquired"] == nil)
            #expect(objects[Self.measurement.rawValue]?[Self.characteristic]?["NotifyAcquired"] != nil)
            // GLS requires encryption: before pairing, the CCCD write fails the way bluetoothd reports ATT 0x05.
            await #expect(throws: DBusError(name: "org.bluez.Error.NotPermitted", message: "Not paired")) {
                try await harness.bluez(Self.racp, Self.characteristic, "StartNotify")
            }
        }
    }

    @Test func racpReportOverDBusWithDisconnectAndBusyFaults() async throws {
        try await SimulatorHarness.with(Self.configuration()) { harness in
            let recorder = try await harness.record()
            try await pairAndSubscribe(harness)
            _ = try await harness.control("InjectFault", [
                .string("health-racp-disconnect"),
                .variantDictionary(["device": .objectPath(Self.meter), "after_records": .uint32(2)]),
            ])
            try await writeRACP(harness, [0x01, 0x01])
            try await recorder.waitFor("disconnect mid-RACP") { $0.changes("Connected", to: .bool(false), at: Self.meter) }
            #expect(Self.values(recorder, at: Self.measurement).map { $0[1] } == [1, 2])
            #expect(Self.values(recorder, at: Self.racp).isEmpty)

            // Reconnect (bonded, encrypted), resume at ≥ 3 after one Server Busy answer.
            try await harness.connect(Self.meter)
            for path in [Self.measurement, Self.racp] { _ = try await harness.bluez(path, Self.characteristic, "StartNotify") }
            _ = try await harness.control("InjectFault", [.string("health-racp-busy"), .variantDictionary([:])])
            try await writeRACP(harness, [0x01, 0x03, 0x01, 0x03, 0x00])
            try await waitUntil("busy response", seconds: 30) { Self.values(recorder, at: Self.racp).count == 1 }
            #expect(Self.values(recorder, at: Self.racp) == [[0x06, 0x00, 0x01, 0x0A]])
            try await writeRACP(harness, [0x01, 0x03, 0x01, 0x03, 0x00])
            try await waitUntil("success response", seconds: 30) { Self.values(recorder, at: Self.racp).count == 2 }
            #expect(Self.values(recorder, at: Self.measurement).map { $0[1] } == [1, 2, 3, 4, 5, 6])
            #expect(Self.values(recorder, at: Self.racp).last == [0x06, 0x00, 0x01, 0x01])
        }
    }

    /// A meter configured as bonded (bluetoothd loaded the bond from storage, the meter kept its keys) reconnects
    /// encrypted without pairing, as after a gateway's reboot: the power-cut rig's boots depend on it.
    @Test func aBondFromBeforeThePowerOnReconnectsWithoutPairing() async throws {
        var configuration = Self.configuration()
        configuration.devices[0].bonded = true
        try await SimulatorHarness.with(configuration) { harness in
            try await harness.discover(Self.meter)
            try await harness.connect(Self.meter)
            #expect(try await harness.property(Self.meter, "org.bluez.Device1", "Connected") == .bool(true))
            for path in [Self.measurement, Self.racp] { _ = try await harness.bluez(path, Self.characteristic, "StartNotify") }
        }
    }

    @Test func procedureAlreadyInProgressIsAnATTError() async throws {
        try await SimulatorHarness.with(Self.configuration()) { harness in
            try await pairAndSubscribe(harness)
            _ = try await harness.control("InjectFault", [
                .string("health-racp-in-progress"), .variantDictionary(["device": .objectPath(Self.meter)]),
            ])
            await #expect(throws: DBusError(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0xfe")) {
                try await writeRACP(harness, [0x01, 0x01])
            }
        }
    }

    /// The device reset and forgot the bond: bluetoothd's reconnect with the old keys fails (the link comes up and
    /// drops with an authentication failure) until RemoveDevice and a new Pair.
    @Test func staleBondFailsUntilRemovedAndPairedAgain() async throws {
        try await SimulatorHarness.with(Self.configuration()) { harness in
            try await pairAndSubscribe(harness)
            _ = try await harness.bluez(Self.meter, "org.bluez.Device1", "Disconnect")
            _ = try await harness.control("InjectFault", [.string("health-forget-bond"), .variantDictionary([:])])
            let recorder = try await harness.record()
            await #expect(throws: DBusError(name: "org.bluez.Error.Failed", message: "le-connection-key-missing")) {
                try await harness.bluez(Self.meter, "org.bluez.Device1", "Connect")
            }
            let reason = recorder.signals.first { $0.member == "Disconnected" && $0.path == Self.meter }
            #expect(reason?.arguments.first == .string("org.bluez.Reason.Authentication"))
            await #expect(throws: DBusError(name: "org.bluez.Error.Failed", message: "le-connection-key-missing")) {
                try await harness.bluez(Self.meter, "org.bluez.Device1", "Connect")
            }
            _ = try await harness.bluez(SimulatorHarness.adapter, "org.bluez.Adapter1", "RemoveDevice", [.objectPath(Self.meter)])
            try await pairAndSubscribe(harness)
            #expect(try await harness.property(Self.meter, "org.bluez.Device1", "Paired") == .bool(true))
        }
    }
}
