import BlueZ
import BlueZSimulator
import DBus
import Foundation
import Testing
import TetherTestSupport

/// A subscription made before a call (StartNotify subscribes to the Value PropertiesChanged first; a property
/// wait subscribes before it reads) must end when that call fails, not live on until the connection closes: a
/// gateway that retries a failing link set-up would otherwise add a match rule to the bus at every attempt.
/// Counted through dbus-daemon's own statistics (`GetConnectionStats` "MatchRules"), as the wire connection's
/// tests do.
@Suite(.serialized)
struct SubscriptionCleanupTests {
    /// A characteristic and a device that BlueZ does not have: every call on them fails.
    static let missingCharacteristic: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_00_01/service0099/char0099"
    static let missingDevice: DBusObjectPath = "/org/bluez/hci0/dev_C0_54_45_00_0F_0F"

    static func matchRules(of name: String, asking connection: DBusConnection) async throws -> UInt32 {
        let stats = try await connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats", arguments: [.string(name)])
        return try #require(stats.first?.variantDictionaryValue?["MatchRules"]?.uint32Value)
    }

    /// Waits (bounded) until `name` holds `expected` rules: a RemoveMatch may still be on its way to the bus.
    static func waitForRules(_ expected: UInt32, of name: String, asking connection: DBusConnection) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        var rules = try await matchRules(of: name, asking: connection)
        while rules != expected, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            rules = try await matchRules(of: name, asking: connection)
        }
        #expect(rules == expected, "\(name) holds \(rules) match rules, expected \(expected)")
    }

    @Test func aFailedStartNotifyLeavesNoMatchRuleOnTheLibdbusConnection() async throws {
        try await BlueZHarness.with { harness in
            let name = harness.connection.uniqueName
            let before = try await Self.matchRules(of: name, asking: harness.connection)
            let characteristic = GattCharacteristic(session: harness.session, path: Self.missingCharacteristic)
            for _ in 0..<3 {
                await #expect(throws: (any Error).self) { _ = try await characteristic.startNotify(timeout: .seconds(5)) }
            }
            try await Self.waitForRules(before, of: name, asking: harness.connection)
        }
    }

    @Test func aFailedStartNotifyLeavesNoMatchRuleOnTheWireConnection() async throws {
        try await BlueZHarness.with { harness in
            let wire = try await DBusWireConnection.connect(to: .address(harness.bus.address))
            let session = BlueZSession(connection: harness.connection, notifications: wire)
            let before = try await Self.matchRules(of: wire.uniqueName, asking: harness.connection)
            let characteristic = GattCharacteristic(session: session, path: Self.missingCharacteristic)
            for _ in 0..<3 {
                await #expect(throws: (any Error).self) { _ = try await characteristic.startNotify(timeout: .seconds(5)) }
            }
            try await Self.waitForRules(before, of: wire.uniqueName, asking: harness.connection)
            await wire.close()
        }
    }

    @Test func aPropertyWaitWhoseReadFailsLeavesNoMatchRule() async throws {
        try await BlueZHarness.with { harness in
            let name = harness.connection.uniqueName
            let before = try await Self.matchRules(of: name, asking: harness.connection)
            let device = Device(session: harness.session, path: Self.missingDevice)
            for _ in 0..<3 {
                await #expect(throws: (any Error).self) { try await device.waitUntil(connected: true, timeout: .seconds(5)) }
                await #expect(throws: (any Error).self) { try await device.waitUntilServicesResolved(timeout: .seconds(5)) }
            }
            try await Self.waitForRules(before, of: name, asking: harness.connection)
        }
    }
}
