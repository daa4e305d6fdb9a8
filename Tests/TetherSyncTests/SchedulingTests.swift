import Foundation
import LinkProtocol
import SyncContract
import Testing
import TetherSync
import TetherPrimitives

@Suite("backoff, scheduling, clock skew: pure rules")
struct SchedulingTests {
    @Test("full jitter stays within min(cap, base·2^(n−1)) and covers it; Retry-After is a floor; a fixed seed repeats")
    func backoff() {
        let backoff = Backoff(base: .milliseconds(100), cap: .seconds(5))
        #expect(backoff.ceiling(afterFailures: 1) == .milliseconds(100))
        #expect(backoff.ceiling(afterFailures: 4) == .milliseconds(800))
        #expect(backoff.ceiling(afterFailures: 10) == .seconds(5))
        #expect(backoff.ceiling(afterFailures: 500) == .seconds(5), "no overflow")
        var random = SplitMix64(seed: 11)
        var samples: [Duration] = []
        for _ in 0..<2000 { samples.append(backoff.delay(afterFailures: 3, using: &random)) }
        #expect(samples.allSatisfy { $0 >= .zero && $0 <= .milliseconds(400) })
        #expect(samples.min()! < .milliseconds(40) && samples.max()! > .milliseconds(360), "the whole interval is used")
        #expect(backoff.delay(afterFailures: 1, retryAfter: .seconds(3), using: &random) >= .seconds(3))
        #expect(backoff.delay(afterFailures: 1, retryAfter: .seconds(3600), using: &random) == .seconds(5), "a hostile Retry-After is capped")
        var a = SplitMix64(seed: 99)
        var b = SplitMix64(seed: 99)
        #expect((0..<20).map { _ in backoff.delay(afterFailures: 5, using: &a) } == (0..<20).map { _ in backoff.delay(afterFailures: 5, using: &b) })
    }

    @Test("the schedule's table: start, success, failure, triggers while healthy, failing and running")
    func schedule() {
        var random = SplitMix64(seed: 1)
        var schedule = SyncSchedule(interval: .seconds(60), backoff: Backoff(base: .seconds(1), cap: .seconds(30)), debounce: .milliseconds(200))
        schedule.receive(.startup, at: .zero)
        #expect(schedule.isDue(at: .zero))
        schedule.started(at: .zero)
        #expect(!schedule.isDue(at: .seconds(1)), "never two at once")
        schedule.receive(.manual, at: .seconds(1))
        #expect(schedule.finished(succeeded: true, retryAfter: nil, at: .seconds(2), using: &random) == .seconds(2), "a manual request during a sync runs right after")
        schedule.started(at: .seconds(2))
        #expect(schedule.finished(succeeded: true, retryAfter: nil, at: .seconds(3), using: &random) == .seconds(63))
        schedule.receive(.localWrite, at: .seconds(2) + .milliseconds(50))
        #expect(schedule.due == .seconds(2) + .milliseconds(200), "local writes are debounced from the last start")
        schedule.started(at: .seconds(4))
        let retry = schedule.finished(succeeded: false, retryAfter: nil, at: .seconds(5), using: &random)
        #expect(retry >= .seconds(5) && retry <= .seconds(6))
        #expect(schedule.consecutiveFailures == 1)
        schedule.receive(.localWrite, at: .seconds(5))
        #expect(schedule.due == retry, "a local write does not cut a backoff short")
        schedule.receive(.reconnect, at: .seconds(5))
        #expect(schedule.due == .seconds(5), "reconnect does")
        schedule.started(at: .seconds(5))
        let second = schedule.finished(succeeded: false, retryAfter: .seconds(10), at: .seconds(6), using: &random)
        #expect(second >= .seconds(16))
        schedule.started(at: .seconds(20))
        schedule.finished(succeeded: true, retryAfter: nil, at: .seconds(21), using: &random)
        #expect(schedule.consecutiveFailures == 0)
    }

    @Test("clock skew comes from Date and the round trip, with its uncertainty")
    func clockSkew() throws {
        let sent = Date(timeIntervalSince1970: 1_800_000_000)
        let sample = try #require(ClockSkew.sample(serverDate: "Fri, 15 Jan 2027 08:00:10 GMT", requestSentAt: sent, roundTrip: .milliseconds(200)))
        // 1_800_000_000 is 2027-01-15T08:00:00Z: the server is 10 s (+0.5 s for the truncated second, −0.1 s half trip) ahead.
        #expect(sample.offset == .milliseconds(10_400))
        #expect(sample.uncertainty == .milliseconds(600))
        #expect(ClockSkew.sample(serverDate: "yesterday", requestSentAt: sent, roundTrip: .zero) == nil)
    }

    @Test("failures say what the engine does next")
    func failureClasses() {
        #expect(SyncFailure(.network, "x").isLinkFailure)
        #expect(SyncFailure(.rateLimited, "x").isLinkFailure)
        #expect(SyncFailure(.unauthorized, "x").isLinkFailure)
        #expect(!SyncFailure(.server, "x").isLinkFailure, "a 500 may be the batch's fault: it spends attempts")
        #expect(!SyncFailure(.rejected, "x").isLinkFailure)
        #expect("\(BearerToken("tether_secret"))" == "<redacted token>")
        #expect(!"\(SyncConfiguration(baseURL: "http://x", token: BearerToken("tether_secret")))".contains("secret"))
    }
}
