import Synchronization
import Testing
import TetherTestSupport

@Suite("ManualClock and bounded waits")
struct ClockAndWaitTests {
    @Test("a sleeper wakes when the clock reaches its deadline, not before")
    func manualClock() async throws {
        let clock = ManualClock()
        let woke = Shared(false)
        let sleeper = Task {
            try await clock.sleep(for: .seconds(5))
            woke.value.withLock { $0 = true }
        }
        try await waitUntil("the sleeper registered") { clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(5))] }
        clock.advance(by: .seconds(4))
        // Still asleep: its deadline is still pending (it is removed only when the sleeper is woken).
        #expect(clock.pendingDeadlines.count == 1)
        clock.advance(to: ManualClock.Instant(offset: .seconds(5)))
        defer { sleeper.cancel() }
        try await waitUntil("the sleeper woken at its deadline", seconds: 10) { woke.value.withLock { $0 } }
        #expect(clock.pendingDeadlines.isEmpty)
        clock.advance(to: .init(offset: .seconds(1)))
        #expect(clock.now.offset == .seconds(5), "never back")
    }

    @Test("cancelling a sleeper ends its sleep with CancellationError")
    func cancellation() async throws {
        let clock = ManualClock()
        let outcome = Shared<String?>(nil)
        let sleeper = Task {
            do {
                try await clock.sleep(for: .seconds(5))
                outcome.value.withLock { $0 = "woken" }
            } catch {
                outcome.value.withLock { $0 = "\(type(of: error))" }
            }
        }
        try await waitUntil("the sleeper registered") { clock.sleeperCount == 1 }
        sleeper.cancel()
        try await waitUntil("the cancelled sleeper to end", seconds: 10) { outcome.value.withLock { $0 } != nil }
        #expect(outcome.value.withLock { $0 } == "CancellationError")
        #expect(clock.sleeperCount == 0)
    }

    @Test("waitUntil times out naming what it awaited; an error ends it unless retried")
    func waits() async throws {
        struct NotYet: Error {}
        let error = await #expect(throws: WaitTimeout.self) { try await waitUntil("never", seconds: 0.1) { false } }
        #expect(error?.description == "timed out waiting for never")
        await #expect(throws: NotYet.self) { try await waitUntil("thrown", seconds: 30) { throw NotYet() } }
        let calls = Mutex(0)
        try await waitUntil("third time", seconds: 30, retryingErrors: true) {
            let call = calls.withLock { $0 += 1; return $0 }
            if call < 3 { throw NotYet() }
            return true
        }
        let retried = await #expect(throws: WaitTimeout.self) {
            try await waitUntil("never", seconds: 0.1, retryingErrors: true) { throw NotYet() }
        }
        #expect(retried?.description.contains("NotYet") == true)
        await #expect(throws: WaitTimeout.self) { try await within(.milliseconds(50), "a long sleep") { try await Task.sleep(for: .seconds(30)) } }
        #expect(try await within(.seconds(30), "a value") { 7 } == 7)
    }
}
