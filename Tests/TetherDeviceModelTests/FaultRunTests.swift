import Testing
import LinkProtocol
@testable import TetherDeviceModel

/// Long seeded runs with every fault at once. While the link is bad anything may be slow; once it is healthy,
/// every event the firmware created must be stored exactly once, and at no moment may an event be ACKed
/// before it is stored (§8.2).
@Suite("LinkPair fault runs")
struct FaultRunTests {
    static let harsh = ChannelFaults(drop: 0.08, duplicate: 0.08, corrupt: 0.05, truncate: 0.03, rechunk: 0.3)

    @Test("every fault at once, then a healthy link: each event stored exactly once", arguments: Array(UInt64(1)...12))
    func faults(seed: UInt64) {
        var configuration = LinkPair.Configuration()
        configuration.mtu = [23, 64, 185, 247][Int(seed % 4)]
        configuration.jitter = .milliseconds(8)
        configuration.deviceToGateway = Self.harsh
        configuration.gatewayToDevice = Self.harsh
        let profile: DeviceProfile = [.v1_0(serial: "TT-F\(seed)"), .v1_4(serial: "TT-F\(seed)"), .v2_0(serial: "TT-F\(seed)")][Int(seed % 3)]
        var pair = LinkPair(firmware: profile, configuration: configuration, seed: seed, start: simulationStart, driftPPM: Double(seed * 7) - 40)
        pair.scheduleHits(count: 300, every: .milliseconds(97), from: simulationStart.advanced(by: .milliseconds(500)))
        // Reboots and link losses in the middle of the stream.
        pair.schedule(.reboot, at: simulationStart.advanced(by: .seconds(9)))
        pair.schedule(.linkLoss, at: simulationStart.advanced(by: .seconds(17)))
        pair.schedule(.storageFull(for: .seconds(3)), at: simulationStart.advanced(by: .seconds(20)))
        pair.schedule(.reboot, at: simulationStart.advanced(by: .seconds(24)))
        pair.schedule(.setFaults(deviceToGateway: .none, gatewayToDevice: .none), at: simulationStart.advanced(by: .seconds(32)))
        pair.run(for: .seconds(32))
        #expect(pair.ackedBeforeStored.isEmpty, "ACK before store: \(pair.ackedBeforeStored.prefix(3))")
        pair.runUntilSettled(limit: .seconds(180))
        #expect(pair.createdEvents.count == 300 - pair.firmware.refusedEvents)
        #expect(pair.isSettled, "\(pair.firmware.eventStore.count) events left on the device")
        #expect(Set(pair.store.events.keys) == pair.createdEvents)
        #expect(pair.ackedBeforeStored.isEmpty)
        #expect(pair.firmware.retransmissions > 0, "the faults should have forced retransmissions")
        // An event has a time exactly when its boot has an anchor (§9.7); a boot that ended before any sync
        // succeeded honestly has none. The last boot ran on a healthy link, so all of its events have one.
        let anchoredBoots = Set(pair.store.anchors.map(\.bootCounter))
        #expect(pair.store.events.values.allSatisfy { ($0.hit.time != nil) == anchoredBoots.contains($0.hit.key.bootCounter) })
        #expect(pair.store.events.values.filter { $0.hit.key.bootCounter == pair.firmware.bootCounter }.allSatisfy { $0.hit.time != nil })
    }

    @Test("event times stay within their uncertainty on a drifting clock over hours (§9)", arguments: [-90.0, 60.0])
    func driftOverHours(ppm: Double) throws {
        var configuration = LinkPair.Configuration()
        configuration.mtu = 247
        configuration.jitter = .milliseconds(12)
        configuration.deviceToGatewayLatency = .milliseconds(45)
        configuration.gatewayToDeviceLatency = .milliseconds(8)
        var pair = LinkPair(firmware: .v1_4(serial: "TT-DRIFT"), configuration: configuration, seed: 77, start: simulationStart, driftPPM: ppm)
        pair.scheduleHits(count: 60, every: .seconds(300), from: simulationStart.advanced(by: .seconds(20)))
        pair.run(for: .seconds(5 * 3600 + 120))
        #expect(pair.isSettled)
        let fit = try #require(pair.session.clock.boots[1]?.fit)
        #expect(abs(fit.driftPPM - ppm) < 5, "fitted \(fit.driftPPM) ppm")
        for event in pair.store.events.values {
            let time = try #require(event.hit.time)
            let truth = pair.firmware.clock.instant(atTicks: UInt64(event.hit.ticks))
            let error = abs(time.utcNanoseconds - truth.nanoseconds)
            // The tick is 1 ms wide: the truth is somewhere in it.
            #expect(error <= time.uncertaintyNanoseconds + 1_000_000, "error \(error) ns > ±\(time.uncertaintyNanoseconds) ns")
        }
    }

    @Test("storage full: devices keep their events and deliver them after the backoff (§8.5, §8.10)")
    func storageFull() {
        var pair = LinkPair(firmware: .v1_4(serial: "TT-FULL"), seed: 5, start: simulationStart)
        pair.schedule(.storageFull(for: .seconds(10)), at: simulationStart.advanced(by: .seconds(2)))
        pair.scheduleHits(count: 50, every: .milliseconds(200), from: simulationStart.advanced(by: .seconds(1)))
        pair.run(for: .seconds(12))
        #expect(!pair.isSettled)
        #expect(pair.firmware.eventStore.count > 0, "the device keeps what the gateway could not store")
        #expect(pair.ackedBeforeStored.isEmpty)
        pair.runUntilSettled(limit: .seconds(120))
        #expect(pair.isSettled)
        #expect(pair.store.events.count == 50)
    }

    @Test("a device whose store fills up refuses new events and counts them; nothing it kept is lost")
    func deviceStoreBound() {
        var profile = DeviceProfile.v1_0(serial: "TT-SMALL")
        profile.eventStoreCapacity = 20
        var pair = LinkPair(firmware: profile, seed: 9, start: simulationStart)
        pair.schedule(.storageFull(for: .seconds(40)), at: simulationStart)
        pair.scheduleHits(count: 30, every: .milliseconds(100), from: simulationStart.advanced(by: .seconds(1)))
        pair.run(for: .seconds(5))
        #expect(pair.firmware.refusedEvents == 10)
        pair.runUntilSettled(limit: .seconds(200))
        #expect(pair.store.events.count == 20)
    }

    @Test("the same seed gives the same run")
    func deterministic() {
        func run() -> [TranscriptEntry] {
            var configuration = LinkPair.Configuration()
            configuration.deviceToGateway = Self.harsh
            configuration.jitter = .milliseconds(5)
            var pair = LinkPair(firmware: .v1_4(serial: "TT-DET"), configuration: configuration, seed: 1234, start: simulationStart)
            pair.scheduleHits(count: 40, every: .milliseconds(150), from: simulationStart)
            pair.run(for: .seconds(20))
            return pair.transcript
        }
        #expect(run() == run())
    }
}
