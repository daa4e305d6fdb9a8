import BlueZTestSupport
import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherGateway
import TetherStore
import Testing
import TetherPrimitives
import TetherSettings
import TetherTestSupport

/// Desired settings reach the device and its report comes back into the store (link protocol §7.11), whether the
/// change is made while the device is connected or while its link is down.
@Suite(.serialized)
struct DesiredSettingsTests {
    static func waitForReported(_ harness: GatewayHarness, version: UInt32) async throws {
        let serial = GatewayHarness.serial(1)
        try await waitUntil("the device's report of settings version \(version) stored", seconds: 60) {
            try harness.storage.settings.settings(serial: serial)?.reportedVersion == version
        }
    }

    static func change(_ harness: GatewayHarness, sensitivity: UInt8) throws -> UInt32? {
        var random = SystemRandomNumberGenerator()
        let change = try harness.storage.settings.changeDesired(
            serial: GatewayHarness.serial(1), to: DeviceSettings(sensitivity: sensitivity, ledBrightness: 25),
            by: .technician, at: Timestamp(nanoseconds: 1), using: &random)
        return change.configToApply?.version
    }

    @Test func aChangeWhileConnectedIsAppliedAndReported() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            try await harness.pairAll(1)
            let serial = GatewayHarness.serial(1)
            try await waitUntil("the device's first report stored", seconds: 60) {
                try harness.storage.settings.settings(serial: serial)?.reportedVersion != nil
            }
            let version = try #require(try Self.change(harness, sensitivity: 8))
            try await harness.gateway.desiredSettingsChanged(serial: serial)
            try await Self.waitForReported(harness, version: version)
        }
    }

    /// The VM's check, made where it can be read: once the device holds the new version and has nothing left
    /// unacknowledged, the gateway has stored that report (§8.2: an ACK follows the durable commit). Waiting for the
    /// stored version instead would pass on the gateway's SET_CONFIG retry 1.5 s later (§8.7), after a device that
    /// stops once it is acknowledged has gone; so the store is read at the moment the device is satisfied.
    @Test func aChangeWhileTheLinkIsDownIsReportedBeforeTheDeviceSeesItAcknowledged() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            try await harness.pairAll(1)
            let serial = GatewayHarness.serial(1)
            let device = try #require(harness.simulated.simulator.devices.first)
            try await waitUntil("the device's first report stored", seconds: 60) {
                try harness.storage.settings.settings(serial: serial)?.reportedVersion != nil
            }
            let before = try #require(await harness.gateway.device(serial)).linksEstablished
            try await harness.simulated.inject("disconnect")
            try await waitUntil("the gateway saw the link go down", seconds: 60) {
                (await harness.gateway.device(serial))?.state != .connected
            }
            let version = try #require(try Self.change(harness, sensitivity: 7))
            try await harness.gateway.desiredSettingsChanged(serial: serial)
            try await waitUntil("linked again", seconds: 60) {
                (await harness.gateway.device(serial))?.linksEstablished ?? 0 > before
            }
            try await waitUntil("the device at version \(version) with every frame acknowledged", seconds: 60) {
                let held = await device.config.version
                let unacknowledged = await device.hasUnacknowledgedMessages
                return held == version && !unacknowledged
            }
            let stored = try #require(try harness.storage.settings.settings(serial: serial))
            let facts = await device.settingsFacts
            #expect(stored.reportedVersion == version, "device facts: \(facts)")
            let acknowledged = facts.compactMap { fact -> UInt32? in
                if case .reportAcknowledged(let version, _) = fact { version } else { nil }
            }
            #expect(acknowledged.last == version)
            // The same on the wire: every CONFIG_DATA an ACK covered was stored first (§8.2), both reports.
            let checked = try AckDiscipline.check(harness.trace.all, address: GatewayHarness.address(1))
            #expect(checked.acknowledgedReports >= 2)
            #expect(checked.decodeErrors.isEmpty, "\(checked.decodeErrors)")
        }
    }

    @Test func aChangeWhileTheLinkIsDownIsAppliedOnReconnect() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            try await harness.pairAll(1)
            let serial = GatewayHarness.serial(1)
            try await waitUntil("the device's first report stored", seconds: 60) {
                try harness.storage.settings.settings(serial: serial)?.reportedVersion != nil
            }
            let before = try #require(await harness.gateway.device(serial)).linksEstablished
            try await harness.simulated.inject("disconnect")
            let version = try #require(try Self.change(harness, sensitivity: 9))
            try await harness.gateway.desiredSettingsChanged(serial: serial)
            try await waitUntil("linked again", seconds: 60) {
                (await harness.gateway.device(serial))?.linksEstablished ?? 0 > before
            }
            try await Self.waitForReported(harness, version: version)
        }
    }
}
