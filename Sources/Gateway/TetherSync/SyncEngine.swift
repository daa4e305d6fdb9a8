import Foundation
import LinkProtocol
import Logging
import SyncContract
import TetherStore
import TetherPrimitives

/// One sync at a time: push (claim under leases, batch, settle) → pull (pages) → apply (store transactions) →
/// integrity gate → cursor. The cursor moves only past pages that passed the gate before and after applying.
/// `SyncService` decides when a sync runs; this actor decides what it does.
public actor SyncEngine {
    public nonisolated let configuration: SyncConfiguration
    public nonisolated let client: SyncHTTPClient
    private let outbox: any SyncOutbox
    private let database: GatewayDatabase
    private let applier: ChangeApplier
    private let cursor: FeedCursor
    private let now: @Sendable () -> Timestamp
    private let logger: Logger
    private var pusher: OutboxPusher
    /// Health samples and tombstones (issue 15), after the push in every sync, with its own backoff.
    private var healthUploader: HealthUploader
    /// The server's daily rollups for the keys the health upload touched (issue 15), right after it.
    private var projectionPuller: HealthProjectionPuller
    private var random: SplitMix64
    /// The last sync failed because of the link: the next one probes first, then releases the commands the
    /// outage held back.
    private var linkDown = false
    /// Commands held by a link failure go back in line at once: at the first sync of an engine (the gateway
    /// restarted) and after an outage.
    private var releaseHeld = true

    /// - Parameters:
    ///   - outbox: defaults to TetherStore's `Outbox` over `database`.
    ///   - now: the gateway's wall clock (leases, timestamps); never used for cursors.
    ///   - seed: randomness for leases, ids and jitter; tests pass a fixed one.
    public init(
        database: GatewayDatabase, configuration: SyncConfiguration, outbox: (any SyncOutbox)? = nil, now: @escaping @Sendable () -> Timestamp = WallClock.now,
        seed: UInt64? = nil, healthFaults: HealthUploaderFaults = HealthUploaderFaults(),
        projectionFaults: HealthProjectionFaults = HealthProjectionFaults(), logger: Logger = Logger(label: "tether.sync")
    ) throws(SyncFailure) {
        var system = SystemRandomNumberGenerator()
        var random = SplitMix64(seed: seed ?? system.next())
        let outbox = outbox ?? StoreOutbox(outbox: Outbox(database: database), seed: random.next())
        self.configuration = configuration
        do {
            self.client = try SyncHTTPClient(configuration: configuration)
        } catch let error as SyncFailure {
            throw error
        } catch {
            throw SyncFailure(.configuration, "\(error)")
        }
        self.outbox = outbox
        self.database = database
        self.applier = ChangeApplier(database: database)
        self.cursor = FeedCursor(cursors: SyncCursors(database: database), name: configuration.cursorName)
        self.now = now
        self.logger = logger
        self.pusher = OutboxPusher(
            outbox: outbox, client: client, versions: applier.versions, settingsService: applier.settingsService, configuration: configuration, now: now,
            logger: logger, batchSize: max(1, configuration.batchSize), random: SplitMix64(seed: random.next()))
        // A health lease outlives the longest request (with its connect), so only a dead upload loses one.
        let healthLease = max(.seconds(60), (configuration.requestTimeout + configuration.connectTimeout) * 2)
        self.healthUploader = HealthUploader(
            queue: HealthUploadQueue(database: database, leaseDuration: healthLease), client: client, batchSize: configuration.batchSize,
            backoff: configuration.backoff, now: now, seed: random.next(), faults: healthFaults, logger: logger)
        self.projectionPuller = HealthProjectionPuller(
            projections: HealthProjections(database: database, claimDuration: healthLease), client: client, now: now, seed: random.next(),
            faults: projectionFaults, logger: logger)
        self.random = random
    }

    /// Closes the HTTP connections. The engine cannot sync afterwards.
    public func shutdown() async {
        await client.shutdown()
    }

    /// Runs one sync and reports what it did; failures are in the report, never thrown. Calls that overlap wait
    /// for each other: one sync at a time, whoever asks.
    public func sync(trigger: SyncTrigger) async -> SyncReport {
        await acquire()
        defer { release() }
        var report = SyncReport(trigger: trigger)
        let started = ContinuousClock.now
        var pusher = self.pusher
        do throws(SyncFailure) {
            if linkDown {
                report.clockSkew = try await pusher.probe()
                linkDown = false
                releaseHeld = true
            }
            if releaseHeld {
                let released = try storeCall("releasing held commands") { () throws(StoreError) in try outbox.releaseLinkFailures(now: now()) }
                if released > 0 { logger.info("draining the commands an outage held", metadata: ["commands": "\(released)"]) }
                releaseHeld = false
            }
            try await pusher.drain(into: &report.push)
            report.clockSkew = pusher.latestSkew ?? report.clockSkew
            // Its failures stay in `report.health` and its own backoff: they do not fail the sync.
            var uploader = healthUploader
            report.health = await uploader.run()
            healthUploader = uploader
            var puller = projectionPuller
            report.projections = await puller.run()
            projectionPuller = puller
            try await pull(into: &report)
        } catch {
            report.failure = error
            linkDown = error.isLinkFailure
        }
        self.pusher = pusher
        report.duration = started.duration(to: .now)
        return report
    }

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }

    /// Fetches one device's settings (with If-None-Match against the version last taken) and applies them: for a
    /// device that connects to this gateway for the first time, whose settings the feed delivered before it was
    /// here. Returns whether the store changed.
    public func refreshSettings(serial: String) async throws(SyncFailure) -> Bool {
        let known = try storeCall("reading a settings version") { () throws(StoreError) in try applier.versions.settings(serial) }
        let answer = try await client.settings(serial: serial, ifNoneMatch: known?.version)
        guard let resource = answer.body, let desired = resource.desired, let author = resource.changedBy else { return false }
        let change = Change(kind: .deviceSettings, operation: .upsert, serial: serial, version: resource.version, settings: .init(desired: desired, changedBy: author))
        if let problem = change.problem { throw SyncFailure(.protocolViolation, "settings of \(serial): \(problem)") }
        return try storeCall("applying settings") { () throws(StoreError) in try applier.apply(change, at: now(), using: &random) }
    }

    /// The feed position the gateway has committed.
    public func committedCursor() throws(SyncFailure) -> SyncCursor {
        try storeCall("reading the cursor") { () throws(StoreError) in try cursor.current() }
    }

    public func outboxCounts() throws(SyncFailure) -> OutboxCounts {
        try storeCall("counting the outbox") { () throws(StoreError) in try outbox.counts() }
    }

    // MARK: - Pull

    private func pull(into report: inout SyncReport) async throws(SyncFailure) {
        var position = try storeCall("reading the cursor") { () throws(StoreError) in try cursor.current() }
        report.pull.cursorBefore = position
        report.pull.cursorAfter = position
        while true {
            let answer = try await client.changes(after: position == .start ? nil : position, limit: configuration.pageSize)
            report.clockSkew = answer.skew ?? report.clockSkew
            let page = answer.body
            report.pull.pages += 1
            report.pull.changes += page.changes.count

            var knowledge: [String: IntegrityGate.DeviceKnowledge] = [:]
            for serial in Set(page.changes.compactMap(\.serial)) {
                knowledge[serial] = try storeCall("reading the registry") { () throws(StoreError) in try applier.knowledge(of: serial) }
            }
            let violations = IntegrityGate.check(page, requestedAfter: position) { knowledge[$0] ?? .unknown }
            guard violations.isEmpty else { throw gateFailure(violations, &report) }

            guard let next = SyncCursor(token: page.nextCursor) else { throw gateFailure([GateViolation(.cursor, "unreadable next_cursor")], &report) }
            // Apply, check and move the cursor in ONE store transaction: a crash or a failed check leaves neither
            // a half-applied page nor a cursor past changes that are not in the store.
            var applied = 0
            var afterApply: [GateViolation] = []
            do throws(StoreError) {
                try database.transaction {
                    for change in page.changes {
                        if try applier.apply(change, at: now(), using: &random) { applied += 1 }
                    }
                    for change in page.changes {
                        if let violation = try applier.verify(change) { afterApply.append(violation) }
                    }
                    // Roll the page back: the store must not keep changes the gate refused.
                    guard afterApply.isEmpty else { throw StoreError(.invalidRequest, "the integrity gate refused the page") }
                    try cursor.advance(to: next, at: now())
                }
            } catch {
                guard afterApply.isEmpty else { throw gateFailure(afterApply, &report) }
                throw SyncFailure(.store, "applying page after \(position): \(error)")
            }
            report.pull.applied += applied
            report.pull.cursorAfter = next
            guard page.hasMore else { return }
            guard next > position else {
                throw SyncFailure(.protocolViolation, "the server says more changes follow \(next) but the cursor did not move")
            }
            position = next
        }
    }

    private func gateFailure(_ violations: [GateViolation], _ report: inout SyncReport) -> SyncFailure {
        report.gateViolations = violations
        logger.error("integrity gate refused a page: the cursor stays", metadata: ["violations": "\(violations)"])
        return SyncFailure(.integrity, violations.map(\.description).joined(separator: "; "))
    }

    private func storeCall<T>(_ what: String, _ body: () throws(StoreError) -> T) throws(SyncFailure) -> T {
        do {
            return try body()
        } catch {
            throw SyncFailure(.store, "\(what): \(error)")
        }
    }
}
