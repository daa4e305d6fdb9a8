import BlueZSimulator
import BlueZTestSupport
import DBus
import TetherGateway
import Testing
import TetherTestSupport

/// Gateway+Holds: a held device's sessions let its link go and get none while it is held, even across a reboot that
/// the supervisor reconnects; released, its link is set up again and what it kept meanwhile is stored.
@Suite struct DeviceHoldTests {
    @Test(.timeLimit(.minutes(3))) func aHeldDeviceKeepsItsEventsUntilReleased() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            let (address, serial) = (GatewayHarness.address(1), GatewayHarness.serial(1))
            let simulated = harness.simulated
            func statistic(_ name: String) async throws -> DBusValue? { try await simulated.statistics(address)[name] }
            try await harness.pairAll(1)
            #expect(try await simulated.recordHits(address, 3) == 3)
            try await waitUntil("3 events stored") { try harness.storedEvents(serial: serial) == 3 }
            let linksBefore = try #require(await harness.gateway.devices().first).linksEstablished

            let hold = try await harness.gateway.hold(serial, for: "firmware update")
            #expect(hold.address == address)
            await #expect(throws: GatewayError.busy("\(address) is held for firmware update")) {
                try await harness.gateway.hold(address, for: "another")
            }
            // Rule 1: the Tether link lets TX go (the device sees no subscriber), and the device stays connected.
            try await waitUntil("TX released") { try await statistic("tx_subscribed")?.boolValue == false }
            #expect(try await statistic("connected")?.boolValue == true)
            try await waitUntil("the snapshot says held") { await harness.gateway.devices().first?.heldFor == "firmware update" }

            // Events the device records now wait in its flash for an ACK.
            #expect(try await simulated.recordHits(address, 4) == 4)
            // A reboot drops the link; the supervisor connects it again (rule 2), and no session is handed it.
            let connectsBefore = try await statistic("connect_calls")?.uint32Value ?? 0
            try await simulated.inject("reboot", ["device": .objectPath(SimulatedBlueZ.devicePath(address))])
            try await waitUntil("reconnected after the reboot") {
                let connects = try await statistic("connect_calls")?.uint32Value ?? 0
                let connected = try await statistic("connected")?.boolValue == true
                return connects > connectsBefore && connected
            }
            // Bounded, for the failure only: a session handed this link would subscribe to TX within it.
            let deadline = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < deadline {
                if try await statistic("tx_subscribed")?.boolValue != false {
                    Issue.record("a session took the held device's link")
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await statistic("events_unacknowledged")?.uint32Value == 4)
            #expect(try harness.storedEvents(serial: serial) == 3)

            // Rule 3: released, the connection is set up again and the kept events arrive.
            await harness.gateway.release(hold)
            await harness.gateway.release(hold)  // a second release of the same hold does nothing
            try await waitUntil("the kept events stored", seconds: 60) { try harness.storedEvents(serial: serial) == 7 }
            try await waitUntil("the device's flash released them") { try await statistic("events_unacknowledged")?.uint32Value == 0 }
            let device = try #require(await harness.gateway.devices().first)
            #expect(device.heldFor == nil)
            #expect(device.linksEstablished > linksBefore)
        }
    }

    @Test(.timeLimit(.minutes(2))) func onlyAnAdoptedDeviceCanBeHeld() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            await #expect(throws: GatewayError.unknownDevice("C0:54:45:00:09:99")) {
                try await harness.gateway.hold("C0:54:45:00:09:99", for: "firmware update")
            }
        }
    }
}
