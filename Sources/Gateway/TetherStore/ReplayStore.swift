import LinkProtocol
import TetherPrimitives

/// Stores a replay's persist batches in a real database, one durable transaction per batch, synchronously: the
/// sink `tether replay --db PATH` gives `TranscriptReplayer.replay(sink:)`.
///
/// Each batch is stored at the latest instant its own items carry (when the transcript's gateway received
/// them), so the rows a replay writes do not depend on when it runs. Storing is idempotent: events are unique
/// by identity, anchors by value, telemetry by receive time, so the same transcript replayed again into the same
/// database adds nothing.
public final class ReplayStore {
    public let service: ConsumptionService
    public private(set) var outcomes: [BatchOutcome] = []
    public private(set) var failures: [StoreError] = []
    private var random: SplitMix64
    private var lastInstant: Timestamp

    /// - Parameter start: the transcript's start, the instant of batches that carry none (DEVICE_INFO).
    public init(database: GatewayDatabase, start: Timestamp, seed: UInt64? = nil) {
        var system = SystemRandomNumberGenerator()
        self.service = ConsumptionService(database: database)
        self.random = SplitMix64(seed: seed ?? system.next())
        self.lastInstant = start
    }

    /// `true` when the batch is durably stored; `false` (the session then hears `storageFull`) when it is not.
    public func store(_ batch: PersistBatch) -> Bool {
        lastInstant = max(lastInstant, Self.instant(of: batch) ?? lastInstant)
        do {
            outcomes.append(try service.apply(batch, at: lastInstant, using: &random))
            return true
        } catch {
            failures.append(error)
            return false
        }
    }

    static func instant(of batch: PersistBatch) -> Timestamp? {
        batch.items.compactMap { item -> Timestamp? in
            switch item {
            case .hit(let hit): hit.receivedAt
            case .battery(_, _, let receivedAt), .sleep(_, _, let receivedAt): receivedAt
            case .anchor(_, let anchor): Timestamp(nanoseconds: anchor.gatewayNanoseconds)
            case .deviceInfo, .reportedConfig: nil
            }
        }.max()
    }
}
