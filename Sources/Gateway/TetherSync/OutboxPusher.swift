import Foundation
import LinkProtocol
import Logging
import SyncContract
import TetherStore
import TetherPrimitives

/// The push phase: claim → batch → send → settle, with up to `pushConcurrency` batches in flight, until nothing
/// is claimable. Per command: `applied`/`duplicate` complete it; `rejected` dead-letters it with the reason; a
/// `conflict` on device settings is merged three ways and the merged settings queued again, any other conflict
/// is parked for a technician. A failed request returns its commands to the queue (link failures without
/// spending attempts) and ends the phase, except for size limits, which shrink the batches and go on.
struct OutboxPusher {
    let outbox: any SyncOutbox
    let client: SyncHTTPClient
    let versions: ServerVersions
    let settingsService: DeviceSettingsService
    let configuration: SyncConfiguration
    let now: @Sendable () -> Timestamp
    let logger: Logger

    /// The batch size now: halved after server errors and size refusals, doubled back after a run of successes.
    var batchSize: Int
    var successesSinceShrink = 0
    var random: SplitMix64
    var latestSkew: ClockSkew.Sample?

    private struct Sent: Sendable {
        var leases: [OutboxLease]
        var outcome: Result<SyncHTTPClient.Answer<PushResponse>, SyncFailure>
    }

    /// Sends one empty push: the cheapest request that proves the link and the token work.
    func probe() async throws(SyncFailure) -> ClockSkew.Sample? {
        try await client.push(body: PushRequestWriter().finish(), commandCount: 0).skew
    }

    mutating func drain(into report: inout PushReport) async throws(SyncFailure) {
        let concurrency = max(1, configuration.pushConcurrency)
        var failure: SyncFailure?
        var inFlight = 0
        var exhausted = false
        let client = client
        await withTaskGroup(of: Sent.self) { group in
            while true {
                while !exhausted, failure == nil, inFlight < concurrency, !Task.isCancelled {
                    let leases: [OutboxLease]
                    let claiming = ContinuousClock.now
                    defer { report.claimTime += claiming.duration(to: .now) }
                    do {
                        leases = try outbox.claim(limit: batchSize, now: now())
                    } catch {
                        failure = SyncFailure(.store, "claiming commands: \(error)")
                        break
                    }
                    guard !leases.isEmpty else {
                        exhausted = true
                        break
                    }
                    let body: [UInt8]
                    let encoding = ContinuousClock.now
                    do throws(SyncFailure) {
                        body = try requestBody(leases)
                        report.encodeTime += encoding.duration(to: .now)
                    } catch {
                        failure = error
                        settleSilently(leases.map { .failed($0, error: LinkFailureMark.prefix + error.description, kind: .transient) })
                        break
                    }
                    report.batches += 1
                    report.commandsSent += leases.count
                    report.largestBatch = max(report.largestBatch, leases.count)
                    inFlight += 1
                    group.addTask {
                        do throws(SyncFailure) {
                            return Sent(leases: leases, outcome: .success(try await client.push(body: body, commandCount: leases.count)))
                        } catch {
                            return Sent(leases: leases, outcome: .failure(error))
                        }
                    }
                }
                guard let sent = await group.next() else { break }
                inFlight -= 1
                let settling = ContinuousClock.now
                defer { report.settleTime += settling.duration(to: .now) }
                do throws(SyncFailure) {
                    try settle(sent, into: &report)
                    exhausted = false  // settling may have made later commands of the same entities claimable
                } catch {
                    failure = failure ?? error
                }
            }
        }
        if let failure { throw failure }
    }

    private func requestBody(_ leases: [OutboxLease]) throws(SyncFailure) -> [UInt8] {
        var writer = PushRequestWriter(reservingCapacity: leases.count * 400)
        for lease in leases {
            let command = lease.command
            var baseVersion: Int64?
            if command.entityType == .deviceSettings {
                // The base the change was made on, captured with it (issue 5); older payloads lack it.
                let payload = try? JSONDecoder().decode(SettingsPayload.self, from: Data(command.payload.utf8))
                do {
                    baseVersion = try payload?.serverVersion ?? versions.settings(command.entityId)?.version
                } catch {
                    throw SyncFailure(.store, "reading the settings version of \(command.entityId): \(error)")
                }
            }
            writer.append(
                id: command.id, entityType: command.entityType.rawValue, entityID: command.entityId, operation: command.operation.rawValue,
                payloadJSON: command.payload, baseVersion: baseVersion)
        }
        return writer.finish()
    }

    private mutating func settle(_ sent: Sent, into report: inout PushReport) throws(SyncFailure) {
        switch sent.outcome {
        case .success(let answer):
            latestSkew = answer.skew ?? latestSkew
            var settlements: [Settlement] = []
            var merges: [(OutboxLease, CommandResult.Conflict)] = []
            settlements.reserveCapacity(sent.leases.count)
            for (lease, result) in zip(sent.leases, answer.body.results) {
                guard result.id == lease.command.id else {
                    // Results come in request order; a mismatch means the answer cannot be trusted for any command.
                    let failure = SyncFailure(.protocolViolation, "result \(result.id) answers command \(lease.command.id)")
                    settleSilently(sent.leases.map { .failed($0, error: "server: \(failure)", kind: .transient) })
                    throw failure
                }
                switch result.status {
                case .applied, .duplicate:
                    if result.status == .applied { report.applied += 1 } else { report.duplicates += 1 }
                    rememberSettingsVersion(lease, result)
                    settlements.append(.completed(lease))
                case .rejected:
                    report.rejected += 1
                    let reason = result.reason ?? "no reason given"
                    logger.warning("command rejected: dead letter", metadata: ["id": "\(lease.command.id)", "entity": "\(lease.command.entityType.rawValue) \(lease.command.entityId)", "reason": "\(reason)"])
                    settlements.append(.failed(lease, error: "rejected: \(reason)", kind: .rejected))
                case .conflict:
                    report.conflicts += 1
                    let conflict = result.conflict
                    let detail = "conflict: \(result.reason ?? "the server's state differs")" + (conflict.map { " (server version \($0.serverVersion))" } ?? "")
                    settlements.append(.failed(lease, error: detail, kind: .conflict))
                    if lease.command.entityType == .deviceSettings, let conflict {
                        merges.append((lease, conflict))
                    } else {
                        logger.warning("command conflicts with the server: parked for a technician", metadata: ["id": "\(lease.command.id)", "detail": "\(detail)"])
                    }
                }
            }
            do {
                report.settled = Self.add(report.settled, try outbox.settle(settlements, now: now()))
            } catch {
                throw SyncFailure(.store, "settling a push: \(error)")
            }
            for (lease, conflict) in merges {
                if mergeSettings(lease, conflict) { report.settingsMerged += 1 }
            }
            successesSinceShrink += 1
            if successesSinceShrink >= 4, batchSize < configuration.batchSize {
                batchSize = min(configuration.batchSize, batchSize * 2)
                successesSinceShrink = 0
            }
        case .failure(let failure):
            try requeue(sent.leases, after: failure, into: &report)
        }
    }

    /// A whole request failed. Size refusals shrink the batches and carry on; anything else ends the phase.
    private mutating func requeue(_ leases: [OutboxLease], after failure: SyncFailure, into report: inout PushReport) throws(SyncFailure) {
        report.requeued += leases.count
        let sizeRefusal = failure.status == 413 || failure.problem?.problemType == .batchTooLong || failure.problem?.problemType == .malformedRequest
        if failure.kind == .rejected, sizeRefusal || failure.status == 400 {
            if leases.count == 1 {
                // One command the server cannot take on its own: no retry will help.
                report.rejected += 1
                report.requeued -= 1
                settleSilently([.failed(leases[0], error: "rejected: \(failure)", kind: .rejected)])
                return
            }
            let limit = failure.problem?.maxCommands ?? leases.count / 2
            batchSize = max(1, min(limit, leases.count / 2))
            successesSinceShrink = 0
            logger.notice("the server refused a batch: retrying in smaller batches", metadata: ["batchSize": "\(batchSize)", "failure": "\(failure)"])
            settleSilently(leases.map { .failed($0, error: LinkFailureMark.prefix + failure.description, kind: .transient) })
            do {
                _ = try outbox.releaseLinkFailures(now: now())
            } catch {
                throw SyncFailure(.store, "requeueing a refused batch: \(error)")
            }
            return
        }
        if failure.kind == .server || failure.kind == .protocolViolation {
            batchSize = max(1, min(batchSize, leases.count) / 2)
            successesSinceShrink = 0
            settleSilently(leases.map { .failed($0, error: "server: \(failure)", kind: .transient) })
        } else if failure.kind == .rejected {
            settleSilently(leases.map { .failed($0, error: "rejected: \(failure)", kind: .rejected) })
            report.rejected += leases.count
        } else {
            settleSilently(leases.map { .failed($0, error: LinkFailureMark.prefix + failure.description, kind: .transient) })
        }
        throw failure
    }

    private func settleSilently(_ settlements: [Settlement]) {
        do {
            _ = try outbox.settle(settlements, now: now())
        } catch {
            // The leases expire on their own and the commands return to the queue: nothing is lost.
            logger.error("could not return commands to the outbox; their leases will expire", metadata: ["error": "\(error)"])
        }
    }

    /// A technician's settings the server accepted become the base of the next push.
    private func rememberSettingsVersion(_ lease: OutboxLease, _ result: CommandResult) {
        guard lease.command.entityType == .deviceSettings, let version = result.version,
            let payload = try? JSONDecoder().decode(SettingsPayload.self, from: Data(lease.command.payload.utf8))
        else { return }
        do {
            let known = try versions.settings(payload.serial)
            if payload.desiredChangedBy == .technician, (known?.version ?? 0) <= version {
                try versions.setSettings(payload.serial, .init(version: version, desired: payload.desired), at: now())
            }
            if payload.desiredChangedBy == .technician {
                try settingsService.acceptServerVersion(
                    serial: payload.serial, basedOn: payload.serverVersion, version: version, settings: try payload.desired?.settings(), at: now())
            }
        } catch {
            logger.error("could not record a settings version", metadata: ["serial": "\(payload.serial)", "error": "\(error)"])
        }
    }

    /// docs/specs/sync-api.yaml and issue 5: a settings conflict is merged three ways — base: the server settings the
    /// technician's change was based on (carried in its payload), mine: the gateway's desired settings, theirs:
    /// the server's settings now. Changes on one side win; a setting both sides changed differently becomes a
    /// visible conflict (`DeviceSettingsService.conflicts()`) holding both values, and the server's value stays
    /// until someone resolves it. The merged settings are queued as a new technician change on the server's
    /// version, and the conflicting command is dropped. Returns whether the merge happened (otherwise the
    /// command stays in `conflict` for a technician).
    private mutating func mergeSettings(_ lease: OutboxLease, _ conflict: CommandResult.Conflict) -> Bool {
        let serial = lease.command.entityId
        do {
            let server: SettingsDocument? = conflict.serverValue == .null ? nil : try conflict.serverValue.decode(SettingsDocument.self)
            let payload = try JSONDecoder().decode(SettingsPayload.self, from: Data(lease.command.payload.utf8))
            let base = try (payload.serverSettings ?? (payload.serverVersion == nil ? versions.settings(serial)?.desired : nil))?.settings()
            let disagreements = try settingsService.mergeServerConflict(
                serial: serial, base: base, serverVersion: conflict.serverVersion, server: try server?.settings(), at: now(), using: &random)
            for disagreement in disagreements {
                logger.warning("settings changed differently on the server and by a technician: kept as a conflict",
                    metadata: ["serial": "\(serial)", "setting": "\(disagreement)"])
            }
            if (try versions.settings(serial)?.version ?? -1) < conflict.serverVersion {
                try versions.setSettings(serial, .init(version: conflict.serverVersion, desired: server), at: now())
            }
            try outbox.discard(id: lease.command.id)
            return true
        } catch {
            logger.warning("settings conflict left for a technician", metadata: ["serial": "\(serial)", "error": "\(error)"])
            return false
        }
    }

    static func add(_ a: SettleSummary, _ b: SettleSummary) -> SettleSummary {
        var sum = a
        sum.completed += b.completed
        sum.retrying += b.retrying
        sum.conflicts += b.conflicts
        sum.deadLetters += b.deadLetters
        sum.leasesLost += b.leasesLost
        return sum
    }
}
