import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import LinkProtocol
import TetherGateway
import TetherStore
import Testing
import TetherTestSupport

/// The gateway against tether-sim: pairing, connecting, events stored exactly once through faults, the ACK
/// discipline, storage full and graceful shutdown.
@Suite(.serialized)
struct GatewayEndToEndTests {
    @Test func pairedDeviceConnectsAndItsEventsAreStoredOnce() async throws {
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: 1)) { harness in
            try await harness.pairAll(1)
            let address = GatewayHarness.address(1)
            let recorded = try await harness.simulated.recordHits(address, 25)
            #expect(recorded == 25)
            try await waitUntil("25 events stored") { try harness.storedEvents(serial: GatewayHarness.serial(1)) == 25 }
            let device = try #require(await harness.gateway.device(GatewayHarness.serial(1)))
            #expect(device.address == address)
            #expect(device.paired)
            #expect(device.state == .connected)
            #expect(device.notifyMethod == .acquireNotify)
            #expect(device.mtu == 247)
            #expect(device.firmware != nil)
            #expect(device.framesReceived > 0 && device.framesSent > 0)
            try await waitUntil("the snapshot counts 25 events") {
                await harness.gateway.device(address)?.eventsStored == 25
            }
            // The registry learnt the address and the pairing from the stored DEVICE_INFO.
            let record = try #require(try harness.storage.registry.device(serial: GatewayHarness.serial(1)))
            #expect(record.address == address)
            #expect(record.pairingState == .paired)
        }
    }
}

extension GatewayEndToEndTests {
    /// Link protocol §8.2 observed on the wire: with a committer that lingers 150 ms before each commit, an ACK
    /// that ran ahead of durability would show up as acknowledged hits outnumbering committed ones.
    @Test func acksFollowDurableCommits() async throws {
        try await SimulatedBlueZ.with(GatewayHarness.configuration(devices: 1)) { simulated in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-ack-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var committerConfiguration = GroupCommitter.Configuration()
            committerConfiguration.linger = .milliseconds(150)
            let harness = try await GatewayHarness.start(
                simulated: simulated, directory: directory, configuration: GatewayHarness.gatewayConfiguration(),
                committer: committerConfiguration)
            do {
                try await harness.pairAll(1)
                let address = GatewayHarness.address(1)
                for _ in 0..<4 { try await simulated.recordHits(address, 15) }
                try await waitUntil("60 events stored") {
                    try harness.storedEvents(serial: GatewayHarness.serial(1)) == 60
                }
                // Give the last ACKs time to be written, then check every one of them.
                try await waitUntil("ACKs for all 60 hits") {
                    try AckDiscipline.check(harness.trace.all, address: address).acknowledged == 60
                }
                let checked = try AckDiscipline.check(harness.trace.all, address: address)
                #expect(checked.acks > 0 && checked.acknowledged == 60)
                #expect(checked.acknowledgedReports >= 1, "the device's CONFIG_DATA after GET_CONFIG")
                #expect(checked.decodeErrors.isEmpty, "\(checked.decodeErrors)")
            } catch {
                await harness.stop()
                throw error
            }
            await harness.stop()
        }
    }

    /// Four devices under random disconnects, dropped and duplicated notifications, a reboot and a bluetoothd
    /// restart: every event the firmware recorded is stored exactly once.
    /// Both notification paths: AcquireNotify (a socket per device) and StartNotify (PropertiesChanged read by
    /// the wire-protocol connection, in batches).
    @Test(arguments: [GatewayConfiguration.NotifyPreference.acquireFirst, .startNotifyOnly])
    func faultsLoseNothingAndStoreNothingTwice(notify: GatewayConfiguration.NotifyPreference) async throws {
        let count = 4
        var configuration = GatewayHarness.gatewayConfiguration()
        configuration.notifyPreference = notify
        try await GatewayHarness.with(
            simulator: GatewayHarness.configuration(devices: count, seed: 11), gateway: configuration
        ) { harness in
            try await harness.pairAll(count)
            let simulated = harness.simulated
            try await simulated.inject("random-disconnects", ["mean_interval_ms": .uint32(700)])
            try await simulated.inject("drop-notifications", ["probability": .double(0.05)])
            try await simulated.inject("duplicate-notifications", ["probability": .double(0.05)])
            var recorded = [Int](repeating: 0, count: count + 1)
            for round in 0..<5 {
                for number in 1...count {
                    recorded[number] += try await simulated.recordHits(GatewayHarness.address(number), 20)
                }
                switch round {
                case 1: try await simulated.inject("reboot", ["device": .objectPath(SimulatedBlueZ.devicePath(GatewayHarness.address(2)))])
                case 2: try await simulated.inject("bluetoothd-restart", ["downtime_ms": .uint32(300)])
                default: break
                }
                try await Task.sleep(for: .milliseconds(400))
            }
            // Calm the link so the retransmissions can finish, then every event must be there exactly once.
            try await simulated.inject("random-disconnects", ["mean_interval_ms": .uint32(0)])
            try await simulated.inject("drop-notifications", ["probability": .double(0)])
            try await simulated.inject("duplicate-notifications", ["probability": .double(0)])
            for number in 1...count {
                let serial = GatewayHarness.serial(number)
                try await waitUntil("\(recorded[number]) events of \(serial)", seconds: 60) {
                    try harness.storedEvents(serial: serial) >= recorded[number]
                }
                #expect(try harness.storedEvents(serial: serial) == recorded[number])
                // Each stored event was stored by exactly one commit (the session hears of a commit a little
                // after the database has it, so wait for the trace to catch up; more would be a double store).
                func storedByCommits() -> Int {
                    harness.trace.all.reduce(0) { total, event in
                        guard case .committed(_, _, let stored) = event else { return total }
                        return total + stored.count { $0.serial == serial }
                    }
                }
                try await waitUntil("the commits of \(serial) reported") { storedByCommits() >= recorded[number] }
                #expect(storedByCommits() == recorded[number])
            }
            let devices = await harness.gateway.devices()
            #expect(devices.count == count)
            #expect(devices.allSatisfy { $0.linksEstablished >= 2 }, "every device reconnected at least once")
            let expectedMethod: GatewayDevice.NotifyMethod = notify == .startNotifyOnly ? .startNotify : .acquireNotify
            #expect(devices.allSatisfy { $0.notifyMethod == expectedMethod })
            for device in devices {
                let checked = try AckDiscipline.check(harness.trace.all, address: device.address)
                #expect(checked.acks > 0)
                // A value holds the end of one frame and the start of the next (§3.1), so a dropped value or a
                // link lost mid-frame leaves partial frames: only the errors a lost value makes, no corruption.
                let lostValueCodes: Set<FrameError.Code> = [.truncated, .badCRC, .unsynchronized]
                #expect(checked.decodeErrors.allSatisfy { lostValueCodes.contains($0.code) }, "\(checked.decodeErrors)")
            }
        }
    }

    /// Storage full (link protocol §8.10): no ACKs, the device keeps its events; a gateway with room later gets
    /// every one of them.
    @Test func storageFullStopsAcksAndTheDeviceKeepsItsEvents() async throws {
        try await SimulatedBlueZ.with(GatewayHarness.configuration(devices: 1)) { simulated in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-full-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let address = GatewayHarness.address(1)
            let serial = GatewayHarness.serial(1)
            // A cap the schema alone already exceeds: every commit is refused as a storage condition.
            let full = try await GatewayHarness.start(
                simulated: simulated, directory: directory, configuration: GatewayHarness.gatewayConfiguration(),
                limits: StorageLimits(maximumDatabaseBytes: 1, minimumFreeDiskBytes: nil), databaseName: "full.sqlite")
            do {
                // Recorded before the link comes up, so the device sends hits in its first window, beside its
                // DEVICE_INFO: once the first refusal arrives it holds everything back for 30 s (§8.5), longer than
                // this test waits.
                #expect(try await simulated.recordHits(address, 30) == 30)
                _ = try await full.gateway.pair(address: address, delegate: RejectingDelegate())
                try await waitUntil("the link up") { await full.gateway.device(address)?.state == .connected }
                // The barrier: hits reached the gateway, a commit was refused (so the device holds back for its
                // storage backoff, §8.5) and every batch submitted so far has completed. Frames go to a batch as
                // they are received, and an ACK is written as its batch's completion is handled: an ACK or a stored
                // event would be there by now.
                try await waitUntil("hits received, a refusal, and every batch completed") {
                    let trace = full.trace.all
                    let submitted = trace.count { if case .submitted = $0 { true } else { false } }
                    let refused = trace.count { if case .persistFailed = $0 { true } else { false } }
                    let committed = trace.count { if case .committed = $0 { true } else { false } }
                    return !AckDiscipline.hitsReceived(trace, address: address).isEmpty && refused > 0
                        && submitted == refused + committed
                }
                #expect(try full.storedEvents(serial: serial) == 0)
                let checked = try AckDiscipline.check(full.trace.all, address: address)
                #expect(checked.acknowledged == 0 && checked.acknowledgedReports == 0)
                #expect(checked.decodeErrors.isEmpty, "\(checked.decodeErrors)")
                #expect(await full.gateway.device(address)?.lastError?.contains("storage") == true)
            } catch {
                await full.stop()
                throw error
            }
            await full.stop()
            // The same device, a gateway with room: all 30 arrive (the firmware kept them).
            let roomy = try await GatewayHarness.start(
                simulated: simulated, directory: directory, configuration: GatewayHarness.gatewayConfiguration(),
                databaseName: "roomy.sqlite")
            do {
                try await roomy.gateway.adopt(address: address)
                try await waitUntil("30 events stored", seconds: 30) { try roomy.storedEvents(serial: serial) == 30 }
            } catch {
                await roomy.stop()
                throw error
            }
            await roomy.stop()
        }
    }

    /// Graceful shutdown: events in flight are committed and acknowledged, the device is disconnected, and a new
    /// gateway on the same database gets the rest — nothing lost, nothing twice.
    @Test func gracefulShutdownLosesNothing() async throws {
        try await SimulatedBlueZ.with(GatewayHarness.configuration(devices: 2)) { simulated in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-stop-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var recorded = [0, 0, 0]
            let first = try await GatewayHarness.start(
                simulated: simulated, directory: directory, configuration: GatewayHarness.gatewayConfiguration())
            do {
                try await first.pairAll(2)
                for number in 1...2 {
                    recorded[number] += try await simulated.recordHits(GatewayHarness.address(number), 200)
                }
                // Stop while the devices are still sending (200 hits take ~0.5 s at the link model's rate): as soon
                // as each has a first commit, so the stream is under way on both links.
                try await waitUntil("a first commit of each device") {
                    try (1...2).allSatisfy { try first.storedEvents(serial: GatewayHarness.serial($0)) > 0 }
                }
            } catch {
                await first.stop()
                throw error
            }
            await first.stop()
            var storedByFirst = [0, 0, 0]
            for number in 1...2 {
                let statistics = try await simulated.statistics(GatewayHarness.address(number))
                #expect(statistics["connected"] == .bool(false), "shutdown disconnects every device")
                storedByFirst[number] = try first.storedEvents(serial: GatewayHarness.serial(number))
                let checked = try AckDiscipline.check(first.trace.all, address: GatewayHarness.address(number))
                #expect(checked.decodeErrors.isEmpty, "\(checked.decodeErrors)")
                // Graceful: every commit the first gateway made was acknowledged before it let the link go.
                #expect(checked.acknowledged == storedByFirst[number])
            }
            // The shutdown came mid-stream: events were still on the devices, for the second gateway to take.
            #expect(storedByFirst[1] + storedByFirst[2] < recorded[1] + recorded[2], "stored \(storedByFirst) of \(recorded)")
            #expect(recorded[1] == 200 && recorded[2] == 200)
            let leftover = await first.gateway.outstandingWork()
            #expect(leftover.sessions == 0 && leftover.linkSetups == 0 && leftover.bluezCalls == 0)
            let second = try await GatewayHarness.start(
                simulated: simulated, directory: directory, configuration: GatewayHarness.gatewayConfiguration())
            do {
                for number in 1...2 {
                    let serial = GatewayHarness.serial(number)
                    try await waitUntil("\(serial) complete", seconds: 30) {
                        try second.storedEvents(serial: serial) >= recorded[number]
                    }
                    #expect(try second.storedEvents(serial: serial) == recorded[number])
                }
            } catch {
                await second.stop()
                throw error
            }
            await second.stop()
        }
    }
}
