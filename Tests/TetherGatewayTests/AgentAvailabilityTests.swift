import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import TetherGateway
import Testing
import TetherTestSupport

/// The gateway says BlueZ is available (status, `pair`'s check, `waitUntilReady`) only once its Agent1 question
/// is settled: registered, or refused with the reason shown. Before, a `Pair` between reading BlueZ's objects and
/// registering the agent failed, and tetherd retried it for 5 s.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct AgentAvailabilityTests {
    static func withGateway(
        devices: SimulatorConfiguration, faults: [String: DBusValue], _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        try await SimulatedBlueZ.with(devices) { simulated in
            try await simulated.inject("agent-registration", faults)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "tether-agent-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let harness = try await GatewayHarness.start(
                simulated: simulated, directory: directory, configuration: GatewayHarness.gatewayConfiguration(),
                waitForReady: false)
            do {
                try await body(harness)
            } catch {
                await harness.stop()
                throw error
            }
            await harness.stop()
        }
    }

    func agentRegistered(_ harness: GatewayHarness) async -> Bool {
        await harness.simulated.simulator.agents.isRegistered(
            owner: harness.connection.uniqueName, path: harness.gateway.configuration.agentPath)
    }

    /// RegisterAgent takes 1.5 s: the first status that says "available" already has the agent, and a passkey
    /// pairing started at that moment is answered through it.
    @Test func availableOnlyOnceTheAgentIsRegistered() async throws {
        try await Self.withGateway(devices: .generated(count: 2, seed: 3), faults: ["delay_ms": .uint32(1_500)]) {
            harness in
            var sawUnavailable = false
            try await waitUntil("available") {
                if await harness.gateway.status().bluezAvailable { return true }
                sawUnavailable = true
                return false
            }
            #expect(sawUnavailable)
            #expect(await agentRegistered(harness), "available before the agent was registered")
            #expect(await harness.gateway.status().agentError == nil)
            // Device 2 asks for a passkey: the agent must be there to answer.
            let technician = GatewayControlTests.Technician(accept: true)
            let device = try await harness.gateway.pair(address: GatewayHarness.address(2), delegate: technician)
            #expect(device.paired)
            #expect(technician.questions.withLock { $0 } == ["passkey"])
        }
    }

    @Test func aRefusedAgentIsReportedAndPairSaysWhy() async throws {
        try await Self.withGateway(devices: .generated(count: 1, seed: 3), faults: ["refuse": .bool(true)]) { harness in
            await harness.gateway.waitUntilReady()
            let status = await harness.gateway.status()
            #expect(status.bluezAvailable)
            let reason = try #require(status.agentError)
            #expect(reason.hasPrefix("the pairing agent could not be registered with BlueZ:") && reason.contains("refused (fault)"))
            await #expect(throws: GatewayError.unavailable(reason)) {
                _ = try await harness.gateway.pair(address: GatewayHarness.address(1), delegate: RejectingDelegate())
            }
            // Scanning needs no agent.
            try await harness.gateway.startScan()
            try await harness.gateway.stopScan()
        }
    }

    /// bluetoothd forgets agents when it restarts: the gateway is unavailable until it registered again, and the
    /// agent answers the new bluetoothd's questions.
    @Test func afterABluetoothdRestartTheAgentIsRegisteredAgainBeforeAvailability() async throws {
        try await Self.withGateway(devices: .generated(count: 2, seed: 3), faults: [:]) { harness in
            await harness.gateway.waitUntilReady()
            #expect(await agentRegistered(harness))
            try await harness.simulated.inject("agent-registration", ["delay_ms": .uint32(1_000)])
            try await harness.simulated.inject("bluetoothd-restart", ["downtime_ms": .uint32(200)])
            try await waitUntil("unavailable during the restart") { !(await harness.gateway.status().bluezAvailable) }
            try await waitUntil("available again") { await harness.gateway.status().bluezAvailable }
            #expect(await agentRegistered(harness), "available again before the agent was registered")
            let technician = GatewayControlTests.Technician(accept: true)
            let device = try await harness.gateway.pair(address: GatewayHarness.address(2), delegate: technician)
            #expect(device.paired)
            #expect(technician.questions.withLock { $0 } == ["passkey"])
        }
    }
}
