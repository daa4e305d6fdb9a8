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
