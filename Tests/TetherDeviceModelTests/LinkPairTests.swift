import Testing
import LinkProtocol
@testable import TetherDeviceModel
import TetherSettings

@Suite("LinkPair: firmware model and gateway session together")
struct LinkPairTests {
    @Test("a clean link stores every event once and ACKs only stored events", arguments: [23, 247])
    func cleanLink(mtu: Int) {
        var configuration = LinkPair.Configuration()
        configuration.mtu = mtu
        var pair = LinkPair(firmware: .v1_4(serial: "TT-CLEAN"), configuration: configuration, seed: 1, start: simulationStart)
        pair.scheduleHits(count: 200, every: .milliseconds(50), from: simulationStart.advanced(by: .seconds(1)))
        pair.run(for: .seconds(30))
        #expect(pair.createdEvents.count == 200)
        #expect(pair.isSettled)
        #expect(pair.store.events.count == 200)
        #expect(pair.store.events.values.allSatisfy { $0.deliveries == 1 })
        #expect(pair.ackedBeforeStored.isEmpty)
        #expect(pair.firmware.retransmissions == 0)
        #expect(pair.store.negotiatedVersion == 1)
        #expect(pair.store.anchors.count == 1)
        // Every event has a wall-clock time once the boot has an anchor (§9.7), within a few ms of the truth.
        for event in pair.store.events.values {
            let time = try! #require(event.hit.time)
            let truth = pair.firmware.clock.instant(atTicks: UInt64(event.hit.ticks))
            #expect(abs(time.utcNanoseconds - truth.nanoseconds) <= time.uncertaintyNanoseconds + 1_000_000)
        }
    }

    /// Seen in 2 of 5 real-BlueZ runs: the device power-cycled inside the gateway's first time-sync burst, and its
    /// first boot never got an anchor, so its events kept no wall-clock time (§9.3, §9.7).
    @Test("a device that reboots inside the first time-sync burst still gets an anchor for that boot")
    func rebootInsideFirstBurst() {
        var pair = LinkPair(firmware: .v1_4(serial: "TT-REBOOT"), seed: 3, start: simulationStart)
        pair.scheduleHits(count: 5, every: .milliseconds(1), from: simulationStart)
        // Samples arrive about 60 ms and 190 ms after the connect (15 ms each way, requests 100 ms apart): the
        // reboot at 250 ms ends the link with the third request unanswered.
        pair.schedule(.reboot, at: simulationStart.advanced(by: .milliseconds(250)))
        pair.scheduleHits(count: 5, every: .milliseconds(1), from: simulationStart.advanced(by: .seconds(3)))
        pair.run(for: .seconds(4))  // every hit recorded: "settled" means stored from here on
        pair.runUntilSettled(limit: .seconds(30))
        pair.run(for: .seconds(5))
        #expect(pair.isSettled)
        #expect(pair.connections == 2)
        #expect(Set(pair.store.events.keys.map(\.bootCounter)) == [1, 2])
        #expect(Set(pair.store.anchors.map(\.bootCounter)) == [1, 2])
        for event in pair.store.events.values {
            #expect(event.hit.time != nil, "event \(event.hit.key) has no wall-clock time")
        }
    }

    /// §8.7: GET_CONFIG and SET_CONFIG are answered by CONFIG_DATA, a reliable frame that queues behind the
    /// device's window. With a backlog and a store slower than the request's 1.5 s × 3, the window stays full of
    /// events waiting for their commit: the gateway must wait for the answer, not call the device unresponsive.
    @Test("a config request answered from behind a full window of un-ACKed events is waited for, not given up")
    func configAnswerBehindFullWindow() {
        var profile = DeviceProfile.v1_4(serial: "TT-BUSY")
        profile.window = 16
        var configuration = LinkPair.Configuration()
        configuration.persistLatency = .seconds(5)
        let desired = DeviceConfig(version: 7, settings: DeviceSettings(sensitivity: 9))
        configuration.desiredConfig = desired
        var pair = LinkPair(firmware: profile, configuration: configuration, seed: 5, start: simulationStart)
        pair.scheduleHits(count: 100, every: .milliseconds(1), from: simulationStart)
        pair.run(for: .seconds(1))  // every hit recorded: "settled" means stored from here on
        pair.runUntilSettled(limit: .seconds(120))
        pair.run(for: .seconds(10))
        #expect(pair.connections == 1)
        #expect(pair.isSettled)
        #expect(pair.store.events.count == 100)
        #expect(pair.firmware.config.version == 7)
        #expect(pair.store.reportedConfig?.version == 7)
        #expect(pair.ackedBeforeStored.isEmpty)
    }

    /// §8.10 keeps the connection while the store is full; §8.5 has the device hold its frames back for 30 s.
    /// Its CONFIG_DATA waits with them: the request must outlast the hold, not end the link after 4.5 s.
    @Test("a config request waits out the device's storage-full hold instead of disconnecting")
    func configAnswerBehindStorageFullHold() {
        var configuration = LinkPair.Configuration()
        configuration.desiredConfig = DeviceConfig(version: 3, settings: DeviceSettings(ledBrightness: 10))
        var pair = LinkPair(firmware: .v1_4(serial: "TT-HOLD"), configuration: configuration, seed: 6, start: simulationStart)
        pair.schedule(.storageFull(for: .seconds(20)), at: simulationStart)
        pair.scheduleHits(count: 30, every: .milliseconds(1), from: simulationStart)
        pair.run(for: .seconds(1))
        pair.runUntilSettled(limit: .seconds(120))
        pair.run(for: .seconds(10))
        #expect(pair.connections == 1)
        #expect(pair.isSettled)
        #expect(pair.store.reportedConfig?.version == 3)
    }
}

@Suite("LinkPair: settings (§7.11)")
struct LinkPairSettingsTests {
    /// The gateway asks SET_CONFIG as soon as the device's first CONFIG_DATA arrives, before that report is stored
    /// and ACKed. The device's answer must be a frame of its own: sent under the first report's number, the gateway
    /// takes it for the frame it already has, and that frame's ACK tells the device its new report arrived (the
    /// settings report lost in a VM run: device at version 2, every frame ACKed, gateway stored version 1).
    @Test("a report made while the previous one awaits its ACK is stored before it is acknowledged")
    func reportAfterSetConfigBeforeTheFirstReportsAck() throws {
        var configuration = LinkPair.Configuration()
        let desired = DeviceConfig(version: 2, settings: DeviceSettings(sensitivity: 8, ledBrightness: 25))
        configuration.desiredConfig = desired
        var pair = LinkPair(firmware: .v2_0(serial: "TT-SET"), configuration: configuration, seed: 3, start: simulationStart)
        #expect(pair.firmware.config.version != desired.version)
        // Less than the request timeout (§8.7: 1500 ms): a SET_CONFIG retry must not be what repairs a lost report.
        pair.run(for: .milliseconds(1000))
        #expect(pair.firmware.config.version == 2)
        #expect(!pair.firmware.hasUnacknowledgedMessages)
        #expect(pair.reportsAckedBeforeStored.isEmpty, "reports ACKed but never stored: \(pair.reportsAckedBeforeStored)")
        #expect(pair.store.reportedVersions == [pair.firmware.profile.initialConfig.version, 2])
        #expect(pair.store.reportedConfig == pair.firmware.config)
        #expect(pair.session.reportedConfig == pair.firmware.config)
    }
}
