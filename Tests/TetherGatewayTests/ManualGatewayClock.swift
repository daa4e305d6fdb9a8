import ConnectionSupervisor
import TetherGateway
import TetherTestSupport

/// The shared `ManualClock` in the supervisor's units: the supervisor driver's clock moves only when the test says
/// so. The link session's wall clock stays real: the supervisor driver does not read it.
struct ManualGatewayClock: Sendable {
    let clock = ManualClock()
    /// Far from zero, so an instant mistakenly taken from another clock stands out.
    let start: SupervisorInstant

    init(start: SupervisorInstant = SupervisorInstant(nanoseconds: 1_000 * 1_000_000_000)) {
        self.start = start
    }

    var now: SupervisorInstant { start + clock.now.offset }

    /// The deadlines of the sleeps still waiting for the clock, earliest first.
    var pendingDeadlines: [SupervisorInstant] { clock.pendingDeadlines.map { start + $0.offset } }

    var gatewayClock: GatewayClock {
        let clock = clock
        let start = start
        return GatewayClock(
            supervisorNow: { start + clock.now.offset }, linkNow: GatewayClock.system.linkNow,
            sleep: { try await clock.sleep(for: $0) })
    }

    /// Moves the clock forward and wakes every sleep whose deadline has come.
    func advance(by duration: Duration) { clock.advance(by: duration) }

    func advance(to instant: SupervisorInstant) { clock.advance(to: ManualClock.Instant(offset: instant - start)) }
}
