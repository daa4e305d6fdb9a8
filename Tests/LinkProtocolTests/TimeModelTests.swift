import Testing
@testable import LinkProtocol
import TetherPrimitives

@Suite("Device clock model (§9)")
struct TimeModelTests {
    /// A device clock running `ppm` fast, booted at `boot`: what it reads at true time `instant`.
    static func ticks(at instant: Timestamp, bootedAt boot: Timestamp, ppm: Double) -> Int64 {
        Int64((Double(instant.nanoseconds - boot.nanoseconds) / 1e6 * (1 + ppm / 1e6)).rounded(.down))
    }

    @Test("a sample's anchor is the midpoint with RTT/2 uncertainty (§9.2)")
    func sampleMath() throws {
        let sample = TimeSyncSample(bootCounter: 1, requestSentAt: t0, responseReceivedAt: t0.plus(milliseconds: 30), deviceReceiveTicks: 1000, deviceTransmitTicks: 1004)
        #expect(sample.roundTripNanoseconds == 26_000_000)
        let anchor = try #require(sample.anchor)
        #expect(anchor.deviceMicroseconds == 1_002_000)
        #expect(anchor.gatewayNanoseconds == t0.nanoseconds + 15_000_000)
        #expect(anchor.uncertaintyNanoseconds == 13_000_000)
    }

    @Test("a device that claims to have held a request longer than the round trip gives no anchor")
    func impossibleSample() {
        let sample = TimeSyncSample(bootCounter: 1, requestSentAt: t0, responseReceivedAt: t0.plus(milliseconds: 10), deviceReceiveTicks: 0, deviceTransmitTicks: 50)
        #expect(sample.anchor == nil)
    }

    @Test("with any asymmetric split of the delay, the true offset lies within the anchor's uncertainty (§9.2)", arguments: [0.0, 0.1, 0.5, 0.9, 1.0])
    func asymmetry(share: Double) throws {
        // The device clock reads 0 at t0 exactly (no drift). Delay 40 ms, `share` of it on the way in.
        let outbound = Int64(40_000_000 * share)
        let arrival = t0.nanoseconds + outbound
        let deviceTicks = (arrival - t0.nanoseconds) / 1_000_000
        let sample = TimeSyncSample(bootCounter: 1, requestSentAt: t0, responseReceivedAt: t0.plus(milliseconds: 40), deviceReceiveTicks: deviceTicks, deviceTransmitTicks: deviceTicks)
        let anchor = try #require(sample.anchor)
        let truth = t0.nanoseconds + anchor.deviceMicroseconds * 1000
        #expect(abs(anchor.gatewayNanoseconds - truth) <= anchor.uncertaintyNanoseconds + 1_000_000)
    }

    @Test("minimum-RTT selection picks the fastest exchange (§9.3)")
    func minimumRoundTrip() {
        let samples = [35, 9, 22].enumerated().map { index, rtt in
            TimeSyncSample(bootCounter: 1, requestSentAt: t0.plus(milliseconds: Int64(index) * 100), responseReceivedAt: t0.plus(milliseconds: Int64(index) * 100 + Int64(rtt)), deviceReceiveTicks: Int64(index) * 100, deviceTransmitTicks: Int64(index) * 100)
        }
        #expect(TimeSyncSample.bestAnchor(of: samples)?.roundTripNanoseconds == 9_000_000)
    }

    @Test("the fit recovers drift to a few ppm, and one bad anchor cannot move it (§9.4)", arguments: [-80.0, -10.0, 0.0, 35.0, 120.0])
    func driftFit(ppm: Double) throws {
        var clock = BootClock(bootCounter: 1)
        for minute in stride(from: 0, through: 240, by: 10) {
            let instant = t0.plus(milliseconds: Int64(minute) * 60_000)
            let ticks = Self.ticks(at: instant, bootedAt: t0, ppm: ppm)
            clock.add(TimeAnchor(bootCounter: 1, deviceMicroseconds: ticks * 1000, gatewayNanoseconds: instant.nanoseconds, uncertaintyNanoseconds: 4_000_000, roundTripNanoseconds: 8_000_000))
        }
        // An outlier: 900 ms off.
        let odd = t0.plus(milliseconds: 125 * 60_000)
        clock.add(TimeAnchor(bootCounter: 1, deviceMicroseconds: Self.ticks(at: odd, bootedAt: t0, ppm: ppm) * 1000, gatewayNanoseconds: odd.nanoseconds + 900_000_000, uncertaintyNanoseconds: 4_000_000, roundTripNanoseconds: 8_000_000))
        let fit = try #require(clock.fit)
        #expect(abs(fit.driftPPM - ppm) < 3, "estimated \(fit.driftPPM) ppm")
        // An event 3 h 17 min in: the estimate is near the truth and the truth is within the uncertainty.
        let event = t0.plus(milliseconds: 197 * 60_000 + 12_345)
        let estimate = try #require(clock.estimate(ticks: Self.ticks(at: event, bootedAt: t0, ppm: ppm)))
        #expect(abs(estimate.utcNanoseconds - event.nanoseconds) < 20_000_000)
        #expect(abs(estimate.utcNanoseconds - event.nanoseconds) <= estimate.uncertaintyNanoseconds)
    }

    @Test("uncertainty grows with distance from the anchors, at 200 ppm with one anchor (§9.5)")
    func uncertaintyGrowth() throws {
        var clock = BootClock(bootCounter: 1)
        clock.add(TimeAnchor(bootCounter: 1, deviceMicroseconds: 0, gatewayNanoseconds: t0.nanoseconds, uncertaintyNanoseconds: 5_000_000, roundTripNanoseconds: 10_000_000))
        let near = try #require(clock.estimate(ticks: 0))
        let hourLater = try #require(clock.estimate(ticks: 3_600_000))
        #expect(near.uncertaintyNanoseconds == 5_000_000)
        #expect(hourLater.uncertaintyNanoseconds == 5_000_000 + 720_000_000)
        #expect(hourLater.utcNanoseconds == t0.nanoseconds + 3_600_000_000_000)
    }

    @Test("anchors never cross boots, and a boot without anchors has no estimate (§9.6, §9.7)")
    func bootsApart() {
        var clock = DeviceClock()
        clock.add(TimeAnchor(bootCounter: 1, deviceMicroseconds: 0, gatewayNanoseconds: t0.nanoseconds, uncertaintyNanoseconds: 1, roundTripNanoseconds: 2))
        #expect(clock.estimate(boot: 1, ticks: 10) != nil)
        #expect(clock.estimate(boot: 2, ticks: 10) == nil)
    }

    @Test("absurd ticks give no estimate instead of trapping (found by LinkSessionFuzzer)")
    func absurdTicks() {
        var clock = BootClock(bootCounter: 1)
        clock.add(TimeAnchor(bootCounter: 1, deviceMicroseconds: 0, gatewayNanoseconds: t0.nanoseconds, uncertaintyNanoseconds: 1, roundTripNanoseconds: 2))
        #expect(clock.estimate(ticks: .max / 2) == nil)
        #expect(clock.estimate(ticks: 9_000_000_000_000) == nil)  // ~285 years of milliseconds past an anchor in 2026
        #expect(clock.estimate(ticks: 1000) != nil)
    }

    @Test("a boot keeps its first 8 and latest 24 anchors")
    func anchorBound() {
        var clock = BootClock(bootCounter: 1)
        for index in 0..<100 {
            clock.add(TimeAnchor(bootCounter: 1, deviceMicroseconds: Int64(index) * 1_000_000, gatewayNanoseconds: t0.nanoseconds + Int64(index) * 1_000_000_000, uncertaintyNanoseconds: 1_000_000, roundTripNanoseconds: 2_000_000))
        }
        #expect(clock.anchors.count == 32)
        #expect(clock.anchors.prefix(8).map(\.deviceMicroseconds) == (0..<8).map { Int64($0) * 1_000_000 })
        #expect(clock.anchors.last?.deviceMicroseconds == 99_000_000)
    }

    @Test("wrapping counters widen to the nearest value (§8.9, §9.8)", arguments: [
        (UInt64(0), 16, Int64(65_535), Int64(65_536)),
        (65_535, 16, 65_536, 65_535),
        (5, 16, 0, 5),
        (65_535, 16, 0, 65_535),
        (10, 16, 131_070, 131_082),
        (1, 32, 4_294_967_290, 4_294_967_297),
    ])
    func unwrap(wire: UInt64, bits: Int, reference: Int64, expected: Int64) {
        #expect(SerialUnwrap.unwrap(wire, bits: bits, nearest: reference) == expected)
    }

    @Test("serial comparison of sequence numbers across the wrap (§5.2)")
    func serialArithmetic() {
        #expect(SequenceNumber(65_535).distance(to: SequenceNumber(0)) == 1)
        #expect(SequenceNumber(0).distance(to: SequenceNumber(65_535)) == -1)
        #expect(SequenceNumber(100).distance(to: SequenceNumber(90)) == -10)
        #expect(SequenceNumber(65_535).next == SequenceNumber(0))
    }
}
