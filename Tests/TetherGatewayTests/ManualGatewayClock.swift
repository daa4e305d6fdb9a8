import ConnectionSupervisor
import Synchronization
import TetherGateway

/// A supervisor clock that moves only when the test says so (swift-nio's `EmbeddedEventLoop.advanceTime(by:)`).
///
/// `sleep(d)` waits until `advance` has moved the clock to `now + d` (a deadline already reached returns at once);
/// cancelling the sleeping task ends the wait by throwing, as `Task.sleep` does. The link session's wall clock
/// stays real: the supervisor driver does not read it.
final class ManualGatewayClock: Sendable {
    private struct Sleeper {
        let deadline: SupervisorInstant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: SupervisorInstant
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelledBeforeSleeping: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    /// Starts far from zero, so an instant mistakenly taken from another clock stands out.
    init(start: SupervisorInstant = SupervisorInstant(nanoseconds: 1_000 * 1_000_000_000)) {
        state = Mutex(State(now: start))
    }

    var now: SupervisorInstant { state.withLock { $0.now } }

    /// The deadlines of the sleeps still waiting for the clock, earliest first.
    var pendingDeadlines: [SupervisorInstant] { state.withLock { $0.sleepers.values.map(\.deadline).sorted() } }

    var gatewayClock: GatewayClock {
        GatewayClock(
            supervisorNow: { self.now }, linkNow: GatewayClock.system.linkNow, sleep: { try await self.sleep($0) })
    }

    /// Moves the clock forward and wakes every sleep whose deadline has come.
    func advance(by duration: Duration) {
        advance(to: now + duration)
    }

    func advance(to instant: SupervisorInstant) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, instant)
            let now = state.now
            let ids = state.sleepers.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { state.sleepers.removeValue(forKey: $0) }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    func sleep(_ duration: Duration) async throws {
        let (id, deadline, due) = state.withLock { state in
            state.nextID += 1
            let deadline = state.now + duration
            return (state.nextID, deadline, deadline <= state.now)
        }
        try Task.checkCancellation()
        if due { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    if state.cancelledBeforeSleeping.remove(id) != nil { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelledBeforeSleeping.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
