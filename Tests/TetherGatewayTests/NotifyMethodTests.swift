import BlueZSimulator
import BlueZTestSupport
import DBus
import Synchronization
import TetherGateway
import Testing
import TetherTestSupport

/// How TX notifications are subscribed when BlueZ refuses AcquireNotify for a device (link protocol §2.2:
/// subscribe before HELLO): "auto" falls back to StartNotify for that device; "AcquireNotify only"
/// (tetherd's `notify_method = "acquire-notify"`) reports the refusal and lets the supervisor try again.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NotifyMethodTests {
    static let address = GatewayHarness.address(1)

    /// The simulator refuses the device's next AcquireNotify with Failed, an error "auto" falls back on.
    static func refuseNextAcquireNotify(_ simulated: SimulatedBlueZ) async throws {
        try await simulated.inject(
            "acquire-notify-failure",
            ["error": .string("failed"), "device": .objectPath(SimulatedBlueZ.devicePath(address))])
    }

    @Test func acquireNotifyOnlyReportsTheRefusalAndTriesAgainWithoutStartNotify() async throws {
        var configuration = GatewayHarness.gatewayConfiguration()
        configuration.notifyPreference = .acquireOnly
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1), gateway: configuration) {
            harness in
            try await Self.refuseNextAcquireNotify(harness.simulated)
            let changes = await harness.gateway.changes()
            let lastErrors = Mutex<[String]>([])
            let collecting = Task {
                for await change in changes { if let error = change.lastError { lastErrors.withLock { $0.append(error) } } }
            }
            defer { collecting.cancel() }
            _ = try await harness.gateway.pair(address: Self.address, delegate: RejectingDelegate())
            // Bounded for a broken run, not a slow one: in a full run beside two power-cut VMs (load 5 on two
            // cores) the second link took more than the default 30 s once.
            try await waitUntil("linked over AcquireNotify", seconds: 75) {
                let device = await harness.gateway.device(Self.address)
                return device?.state == .connected && device?.linksEstablished == 1
            }
            let device = try #require(await harness.gateway.device(Self.address))
            #expect(device.notifyMethod == .acquireNotify)
            // The refusal was the device's error, in words that name it, and was not replaced by our own
            // Disconnect's "terminated by local host".
            let expected = "link set-up failed: BlueZ refused AcquireNotify on TX"
            try await waitUntil("the refusal published as a change") {
                lastErrors.withLock { $0.contains { $0.hasPrefix(expected) } }
            }
            #expect(!lastErrors.withLock { $0.contains { $0.contains("terminated by local host") } })
            // The second link is healthy (its handshake completed): the error is cleared.
            try await waitUntil("the last error cleared by the healthy link") {
                await harness.gateway.device(Self.address)?.lastError == nil
            }
            #expect(try await harness.simulated.statistics(Self.address)["start_notify_calls"] == .uint32(0))
            // The second link works end to end.
            let recorded = try await harness.simulated.recordHits(Self.address, 5)
            #expect(recorded == 5)
            try await waitUntil("5 events stored") { try harness.storedEvents(serial: GatewayHarness.serial(1)) == recorded }
        }
    }

    @Test func autoFallsBackToStartNotifyForTheRefusedDevice() async throws {
        let configuration = GatewayHarness.gatewayConfiguration()
        #expect(configuration.notifyPreference == .acquireFirst)
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1), gateway: configuration) {
            harness in
            try await Self.refuseNextAcquireNotify(harness.simulated)
            try await harness.pairAll(1)
            let device = try #require(await harness.gateway.device(Self.address))
            #expect(device.notifyMethod == .startNotify)
            #expect(device.linksEstablished == 1)
            #expect(device.lastError == nil)
            #expect(try await harness.simulated.statistics(Self.address)["start_notify_calls"] == .uint32(1))
        }
    }
}
