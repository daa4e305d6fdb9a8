import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import Synchronization
import TetherGateway
import TetherStore
import Testing
import TetherTestSupport

/// The control-API side of the gateway against tether-sim: pairing through the agent with the caller's answers,
/// scanning, forgetting, and recovering from BlueZ's InProgress.
@Suite(.serialized)
struct GatewayControlTests {
    /// Answers like a technician who reads the device's passkey (123456) and confirms it.
    final class Technician: AgentDelegate {
        let questions = Mutex<[String]>([])
        let accept: Bool

        init(accept: Bool) { self.accept = accept }

        func requestPasskey(device: DBusObjectPath) async -> UInt32? {
            questions.withLock { $0.append("passkey") }
            return accept ? 123456 : nil
        }

        func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool {
            questions.withLock { $0.append("confirm \(passkey)") }
            return accept && passkey == 123456
        }
    }

    @Test func pairingAsksTheCallersDelegateAndRefusalFails() async throws {
        // Generated devices: 1 just works, 2 passkey, 3 confirmation.
        try await GatewayHarness.with(simulator: .generated(count: 3, seed: 3)) { harness in
            let refusing = Technician(accept: false)
            await #expect(throws: GatewayError.self) {
                _ = try await harness.gateway.pair(address: GatewayHarness.address(2), delegate: refusing)
            }
            #expect(refusing.questions.withLock { $0 } == ["passkey"])
            #expect(await harness.gateway.device(GatewayHarness.address(2))?.paired != true)

            let technician = Technician(accept: true)
            let passkeyDevice = try await harness.gateway.pair(address: GatewayHarness.address(2), delegate: technician)
            #expect(passkeyDevice.paired)
            let confirmed = try await harness.gateway.pair(address: GatewayHarness.address(3), delegate: technician)
            #expect(confirmed.paired)
            #expect(technician.questions.withLock { $0 } == ["passkey", "confirm 123456"])
            try await waitUntil("both linked") {
                let devices = await harness.gateway.devices()
                return devices.count { $0.state == .connected && $0.serial != nil } == 2
            }
            // Malformed input names what is wrong.
            await #expect(throws: GatewayError.invalidArgument("'NOT-AN-ADDRESS' is not a Bluetooth address")) {
                _ = try await harness.gateway.pair(address: "not-an-address", delegate: technician)
            }
        }
    }

    @Test func scanReportsDevicesWithKnownAndPaired() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 3)) { harness in
            try await harness.pairAll(1)
            let events = await harness.gateway.scanEvents()
            try await harness.gateway.startScan()
            #expect(await harness.gateway.isScanning)
            // Device 1 is connected, so it does not advertise (as with real BlueZ); 2 and 3 do.
            try await waitUntil("two scan results") { await harness.gateway.scanResults().count == 2 }
            let results = await harness.gateway.scanResults()
            #expect(Set(results.map(\.address)) == [GatewayHarness.address(2), GatewayHarness.address(3)])
            let third = try #require(results.first { $0.address == GatewayHarness.address(3) })
            #expect(!third.paired && !third.known && third.name == "Tether-0003" && third.rssi != nil)
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() != nil)
            try await harness.gateway.stopScan()
            #expect(await !harness.gateway.isScanning)
        }
    }

    /// BlueZ passes HCI's "RSSI is not available" (127) through; real BlueZ on btvirt reports only that. The scan
    /// result must say "no signal strength", not 127 dBm.
    @Test func scanTreatsRSSI127AsNotAvailable() async throws {
        var configuration = GatewayHarness.configuration(devices: 1)
        configuration.devices[0].rssi = 127
        try await GatewayHarness.with(simulator: configuration) { harness in
            try await harness.gateway.startScan()
            try await waitUntil("a scan result") { await harness.gateway.scanResults().count == 1 }
            let result = try #require(await harness.gateway.scanResults().first)
            #expect(result.address == GatewayHarness.address(1) && result.rssi == nil)
            try await harness.gateway.stopScan()
        }
    }

    @Test func forgetDisconnectsRemovesAndUnpairs() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            try await harness.pairAll(1)
            let changes = await harness.gateway.changes()
            try await harness.gateway.forget(GatewayHarness.serial(1))
            let address = GatewayHarness.address(1)
            try await waitUntil("the device disconnected and unbonded") {
                let statistics = try await harness.simulated.statistics(address)
                return statistics["connected"] == .bool(false) && statistics["paired"] == .bool(false)
            }
            let record = try #require(try harness.storage.registry.device(serial: GatewayHarness.serial(1)))
            #expect(record.pairingState == .unpaired)
            // It stays disconnected: nothing wants it any more. Shown by state, not by waiting out the backoff:
            // the gateway no longer holds it paired, it is idle, and no BlueZ call or link set-up is out (the
            // supervisor arms no timer for an unwanted device, SupervisorDriverTests).
            try await waitUntil("the gateway quiet with the device unwanted") {
                let work = await harness.gateway.outstandingWork()
                let device = await harness.gateway.device(address)
                return work.linkSetups == 0 && work.bluezCalls == 0 && device.map { !$0.paired && $0.state == .idle } ?? true
            }
            #expect(try await harness.simulated.statistics(address)["connected"] == .bool(false))
            // A change with paired=false was published.
            var sawUnpaired = false
            for await device in changes where device.address == address && !device.paired {
                sawUnpaired = true
                break
            }
            #expect(sawUnpaired)
            await #expect(throws: GatewayError.unknownDevice("C0:54:45:00:00:99")) {
                try await harness.gateway.forget("C0:54:45:00:00:99")
            }
        }
    }

    /// BlueZ answers InProgress (a half-open attempt): the gateway disconnects and removes the device, finds it
    /// again by discovery, reconnects, bonds it again (RemoveDevice deleted the bond; just works needs no one),
    /// and the events recorded meanwhile arrive.
    @Test func inProgressIsClearedAndTheDeviceComesBack() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            try await harness.pairAll(1)
            let address = GatewayHarness.address(1)
            let path = SimulatedBlueZ.devicePath(address)
            try await harness.simulated.inject("connect-failure", ["error": .string("in-progress"), "device": .objectPath(path)])
            try await harness.simulated.inject("disconnect", ["device": .objectPath(path)])
            let recorded = try await harness.simulated.recordHits(address, 10)
            #expect(recorded == 10)
            try await waitUntil("linked again", seconds: 30) {
                guard let device = await harness.gateway.device(address) else { return false }
                return device.linksEstablished >= 2 && device.state == .connected
            }
            // The InProgress rule ran: RemoveDevice (which deletes the bond), then a new bond.
            #expect(try await harness.simulated.statistics(address)["removals"] == .uint32(1))
            try await waitUntil("bonded again") {
                try await harness.simulated.statistics(address)["paired"] == .bool(true)
            }
            #expect(await harness.gateway.device(address)?.lastError?.contains("bond") != true)
            try await waitUntil("10 events stored") { try harness.storedEvents(serial: GatewayHarness.serial(1)) == recorded }
            #expect(await harness.gateway.device(address)?.attempts == 0)
        }
    }

    /// A passkey device cannot be bonded again without the technician: after the InProgress clearing it links
    /// unbonded (its events still arrive), the agent asked no one, and its last error says to pair it again.
    @Test func aPasskeyDeviceRemovedByTheClearingAsksToBePairedAgain() async throws {
        // Generated devices: 1 just works, 2 passkey.
        try await GatewayHarness.with(simulator: .generated(count: 2, seed: 3)) { harness in
            let address = GatewayHarness.address(2)
            let technician = Technician(accept: true)
            _ = try await harness.gateway.pair(address: address, delegate: technician)
            try await waitUntil("linked") { await harness.gateway.device(address)?.linksEstablished == 1 }
            let path = SimulatedBlueZ.devicePath(address)
            try await harness.simulated.inject("connect-failure", ["error": .string("in-progress"), "device": .objectPath(path)])
            try await harness.simulated.inject("disconnect", ["device": .objectPath(path)])
            try await waitUntil("linked again", seconds: 30) {
                guard let device = await harness.gateway.device(address) else { return false }
                return device.linksEstablished >= 2 && device.state == .connected
            }
            try await waitUntil("the lost bond reported") {
                await harness.gateway.device(address)?.lastError?.hasSuffix("pair the device again") == true
            }
            #expect(try await harness.simulated.statistics(address)["paired"] == .bool(false))
            #expect(technician.questions.withLock { $0 } == ["passkey"], "the technician was asked for another device")
            let recorded = try await harness.simulated.recordHits(address, 3)
            #expect(recorded == 3)
            try await waitUntil("3 events stored") { try harness.storedEvents(serial: GatewayHarness.serial(2)) == recorded }
        }
    }
}
