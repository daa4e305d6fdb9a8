import LinkProtocol
@testable import TetherDeviceModel
import TetherPrimitives

/// 2026-11-01T08:00:00Z, the start of every simulated run.
let simulationStart = Timestamp(nanoseconds: (1_793_491_200 + 8 * 3600) * 1_000_000_000)

extension LinkPair {
    /// Runs until every recorded event is stored and released, or `limit` passes.
    mutating func runUntilSettled(limit: Duration) {
        let deadline = now.advanced(by: limit)
        while !isSettled && now < deadline { run(for: .seconds(1)) }
    }
}
