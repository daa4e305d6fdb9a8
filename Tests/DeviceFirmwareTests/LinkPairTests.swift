import Testing
import LinkProtocol
@testable import DeviceFirmware

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
