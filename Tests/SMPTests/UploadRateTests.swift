import SMP
import Testing

/// The upload line's rate and time left (UploadRate): over the last window only, never from a single sample.
@Suite struct UploadRateTests {
    @Test func noRateFromOneSampleOrNoTime() {
        var rate = UploadRate()
        #expect(rate.bytesPerSecond == nil && rate.secondsLeft(totalBytes: 100) == nil)
        rate.record(confirmedBytes: 0, elapsed: .zero)
        #expect(rate.bytesPerSecond == nil)
        rate.record(confirmedBytes: 512, elapsed: .zero)
        #expect(rate.bytesPerSecond == nil)
    }

    @Test func rateAndTimeLeftFromTheSamples() throws {
        var rate = UploadRate()
        rate.record(confirmedBytes: 0, elapsed: .zero)
        rate.record(confirmedBytes: 10_000, elapsed: .seconds(1))
        rate.record(confirmedBytes: 20_000, elapsed: .seconds(2))
        #expect(rate.bytesPerSecond == 10_000)
        // 100 000 bytes in all: 80 000 to go at 10 kB/s.
        #expect(rate.secondsLeft(totalBytes: 100_000) == 8)
        #expect(rate.secondsLeft(totalBytes: 20_000) == 0)
    }

    /// A slow start (the slot's first erase) no longer counts once it is older than the window.
    @Test func onlyTheWindowCounts() throws {
        var rate = UploadRate(window: .seconds(5))
        rate.record(confirmedBytes: 0, elapsed: .zero)
        rate.record(confirmedBytes: 1_000, elapsed: .seconds(10))  // 100 B/s while the slot was erased
        for second in 11...20 { rate.record(confirmedBytes: 1_000 + (second - 10) * 20_000, elapsed: .seconds(second)) }
        #expect(rate.bytesPerSecond == 20_000)
    }

    @Test func aStalledUploadHasNoTimeLeft() {
        var rate = UploadRate()
        rate.record(confirmedBytes: 4_096, elapsed: .seconds(1))
        rate.record(confirmedBytes: 4_096, elapsed: .seconds(3))
        #expect(rate.bytesPerSecond == 0)
        #expect(rate.secondsLeft(totalBytes: 10_000) == nil)
    }
}
