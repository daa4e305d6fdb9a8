import Foundation
import Logging
import SyncContract
import TetherPrimitives
import TetherStore

/// What one projection pull did (`SyncReport.projections`).
public struct HealthProjectionReport: Hashable, Sendable {
    public var requests = 0
    /// Keys asked for.
    public var keys = 0
    /// Keys written fresh.
    public var fresh = 0
    /// Keys answered but touched (or claimed again) meanwhile: left stale for the next pull.
    public var touchedMeanwhile = 0
    /// The failed request that ended the pull, if one did; its keys went back to stale.
    public var failure: SyncFailure?

    public init() {}
}

/// Points where a test stops the puller as a killed gateway would. The daemon sets none.
public struct HealthProjectionFaults: Sendable {
    /// Called after a pull's answer arrived, before it is stored; `true` abandons the run there (the keys stay
    /// `computing` under their claim until it expires).
    public var abandonAfterAnswer: (@Sendable (_ token: String) -> Bool)?
    /// Called between the claim and the request (a test touches keys here, as an upload running meanwhile would).
    public var afterClaim: (@Sendable (_ token: String) -> Void)?

    public init(abandonAfterAnswer: (@Sendable (String) -> Bool)? = nil, afterClaim: (@Sendable (String) -> Void)? = nil) {
        self.abandonAfterAnswer = abandonAfterAnswer
        self.afterClaim = afterClaim
    }
}

/// Pulls the server's daily rollups for the keys the health uploads touched (issue 15; docs/design/health.md,
/// "Projections"): claim stale keys → `POST /v1/health/projections` → store each answer, until none is stale. A sync
/// phase after the health upload, so the keys it just touched are answered in the same sync. The rules of the keys'
/// freshness are `HealthProjections`'; this moves them.
public struct HealthProjectionPuller: Sendable {
    public let projections: HealthProjections
    let client: SyncHTTPClient
    let batchSize: Int
    let now: @Sendable () -> Timestamp
    let faults: HealthProjectionFaults
    let logger: Logger
    private var random: SplitMix64

    public init(
        projections: HealthProjections, client: SyncHTTPClient, batchSize: Int = 200, now: @escaping @Sendable () -> Timestamp, seed: UInt64,
        faults: HealthProjectionFaults = HealthProjectionFaults(), logger: Logger = Logger(label: "tether.sync.projections")
    ) {
        self.projections = projections
        self.client = client
        self.batchSize = min(max(1, batchSize), HealthProjection.maximumKeysPerRequest)
        self.now = now
        self.faults = faults
        self.logger = logger
        self.random = SplitMix64(seed: seed)
    }

    /// One pull. A key touched during it is claimed again by the next pull, not this one (a run takes at most as
    /// many batches as were due when it started, so uploads running beside it cannot keep it going).
    public mutating func run() async -> HealthProjectionReport {
        var report = HealthProjectionReport()
        var rounds = 0
        while !Task.isCancelled, rounds < 1000 {
            rounds += 1
            let claim: (token: String, keys: [HealthProjections.Key])
            do {
                guard let claimed = try projections.claim(limit: batchSize, now: now(), using: &random) else { break }
                claim = claimed
            } catch {
                report.failure = SyncFailure(.store, "claiming health projections: \(error)")
                break
            }
            faults.afterClaim?(claim.token)
            report.requests += 1
            report.keys += claim.keys.count
            let answers: [(key: HealthProjections.Key, rollup: HealthProjections.Rollup)]
            do throws(SyncFailure) {
                let keys = claim.keys.map { HealthProjectionKey(deviceUid: $0.deviceUid, userIndex: $0.userIndex, metricCode: $0.metricCode, day: $0.day) }
                let body = try HealthUploadWire.body(HealthProjectionsRequest(keys: keys))
                let answer = try await client.healthProjections(body: body)
                answers = try Self.match(asked: claim.keys, answered: answer.body.projections)
            } catch {
                _ = try? projections.release(token: claim.token)
                report.failure = error
                logger.warning("health projection pull failed", metadata: ["failure": "\(error)"])
                break
            }
            if faults.abandonAfterAnswer?(claim.token) == true { return report }
            do {
                let fresh = try projections.store(answers, token: claim.token, fetchedAt: now())
                report.fresh += fresh
                report.touchedMeanwhile += answers.count - fresh
            } catch {
                report.failure = SyncFailure(.store, "storing health projections: \(error)")
                break
            }
        }
        return report
    }

    /// The answer must be one rollup per key asked, in order (docs/specs/sync-api.yaml, "Health projections"):
    /// anything else is the server breaking the contract, and nothing of it is stored.
    static func match(
        asked: [HealthProjections.Key], answered: [HealthRollup]
    ) throws(SyncFailure) -> [(key: HealthProjections.Key, rollup: HealthProjections.Rollup)] {
        guard asked.count == answered.count else {
            throw SyncFailure(.protocolViolation, "asked for \(asked.count) projections, got \(answered.count)")
        }
        var answers: [(key: HealthProjections.Key, rollup: HealthProjections.Rollup)] = []
        for (key, rollup) in zip(asked, answered) {
            let echoed = HealthProjections.Key(
                deviceUid: rollup.key.deviceUid, userIndex: rollup.key.userIndex, metricCode: rollup.key.metricCode, day: rollup.key.day)
            guard echoed == key else { throw SyncFailure(.protocolViolation, "a projection answered for \(rollup.key), asked \(key)") }
            answers.append((key, HealthProjections.Rollup(
                count: rollup.count, specialCount: rollup.specialCount, otherUnitCount: rollup.otherUnitCount, unit: rollup.unit,
                min: rollup.min, max: rollup.max, sum: rollup.sum, mean: rollup.mean, lastValue: rollup.last?.value,
                lastEffectiveAt: rollup.last?.effectiveAt, revision: rollup.revision, computedAt: rollup.computedAt)))
        }
        return answers
    }
}
