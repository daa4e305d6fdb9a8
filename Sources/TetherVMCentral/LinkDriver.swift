import Foundation
import LinkProtocol
import TetherStore

/// Drives the gateway's sans-I/O `LinkSession` for one device across its connections: feeds it notifications,
/// carries out its orders (ordered writes to RX, persist through the group committer then `persisted`, timers,
/// disconnect) and counts what it stored. ACKs leave only after the commit (§8.2): the session sends them when
/// `persisted` is called, which happens after `GroupCommitter.commit` returned.
actor LinkDriver {
    private var session: LinkSession
    private let committer: GroupCommitter
    private let service: ConsumptionService
    private var timers: [LinkTimer: Task<Void, Never>] = [:]
    private var writes: AsyncStream<[UInt8]>.Continuation?
    private var writer: Task<Void, Never>?
    private var disconnect: (@Sendable () async -> Void)?
    private var connection = 0
    private(set) var storedHits = 0
    private(set) var duplicateHits = 0
    private(set) var anchors = 0
    private(set) var reports: [String] = []
    private var progress: AsyncStream<Void>.Continuation?

    init(database: GatewayDatabase, desiredConfig: DeviceConfig) {
        service = ConsumptionService(database: database)
        committer = GroupCommitter(service: service, onStatusChange: { status in Log.info("storage status \(status)") })
        // Software emulation on a busy host runs the whole stack tens of times slower than hardware: the
        // defaults (1.5 s per request, §8.7) made the session give up on answers that were merely late.
        var configuration = LinkSessionConfiguration()
        configuration.requestTimeout = .seconds(5)
        configuration.timeSyncTimeout = .seconds(5)
        session = LinkSession(configuration: configuration, desiredConfig: desiredConfig)
    }

    var reportedConfig: DeviceConfig? { session.reportedConfig }
    var deviceInfo: DeviceInfo? { session.deviceInfo }

    /// Yields after every stored batch (the central waits on it for "all hits stored"). One stream per
    /// connection: a cancelled iteration ends an AsyncStream for good, so each connection asks for a new one.
    func progressEvents() -> AsyncStream<Void> {
        progress?.finish()
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        progress = continuation
        return stream
    }

    // MARK: - Link facts

    /// The link is up and TX is subscribed. `write` sends one Write Command on RX; writes leave in order.
    func connected(
        mtu: Int, write: @escaping @Sendable ([UInt8]) async throws -> Void,
        disconnect: @escaping @Sendable () async -> Void
    ) {
        connection += 1
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        writes = continuation
        self.disconnect = disconnect
        writer = Task {
            for await value in stream {
                do {
                    try await write(value)
                } catch {
                    // The link is going down; the session hears it from the notification stream ending.
                    Log.info("write of \(value.count) bytes failed: \(error)")
                }
            }
        }
        apply(session.connected(mtu: mtu, at: WallClock.now()))
    }

    func received(_ value: [UInt8]) {
        apply(session.received(value, at: WallClock.now()))
    }

    func disconnected() {
        apply(session.disconnected(at: WallClock.now()))
        for timer in timers.values { timer.cancel() }
        timers.removeAll()
        writes?.finish()
        writes = nil
        writer = nil
        disconnect = nil
    }

    // MARK: - Session orders

    private func apply(_ actions: [LinkAction]) {
        for action in actions {
            switch action {
            case .write(let value):
                writes?.yield(value)
            case .persist(let batch):
                Task { await self.commit(batch) }
            case .armTimer(let timer, let deadline):
                timers[timer]?.cancel()
                timers[timer] = Task { [weak self] in
                    let wait = deadline.nanoseconds - WallClock.now().nanoseconds
                    if wait > 0 { try? await Task.sleep(for: .nanoseconds(wait)) }
                    guard !Task.isCancelled else { return }
                    await self?.timerFired(timer)
                }
            case .cancelTimer(let timer):
                timers[timer]?.cancel()
                timers[timer] = nil
            case .disconnect(let reason):
                // §8.7: the session gives up on the link and a reconnect starts over; nothing is lost.
                Log.warning("the session ends the link: \(reason)")
                if let disconnect { Task { await disconnect() } }
            case .report(let report):
                record(report)
            }
        }
    }

    private func timerFired(_ timer: LinkTimer) {
        timers[timer] = nil
        apply(session.timerFired(timer, at: WallClock.now()))
    }

    private func commit(_ batch: PersistBatch) async {
        switch await committer.commit(batch) {
        case .success(let outcome):
            storedHits += outcome.storedEvents.count
            duplicateHits += outcome.duplicateEvents.count
            anchors += outcome.anchorsStored
            apply(session.persisted(batch.id, at: WallClock.now()))
        case .failure(let error):
            Log.error("store refused batch \(batch.id): \(error)")
            apply(session.persistFailed(batch.id, reason: .storageFull, at: WallClock.now()))
        }
        progress?.yield()
    }

    private func record(_ report: LinkReport) {
        let line: String
        switch report {
        case .negotiated(let version, let info): line = "negotiated v\(version) with \(info.serial) boot \(info.bootCounter)"
        case .rebootDetected(let serial, let previous, let boot): line = "reboot of \(serial): boot \(previous.map(String.init) ?? "?") -> \(boot)"
        case .anchorAdded(_, let samples): line = "time anchor from \(samples) samples"
        case .duplicate(let key): line = "duplicate \(key)"
        case .repeatedFrame(let sequence): line = "repeated frame \(sequence)"
        case .acknowledged: return
        case .rejected(let error, let nack): line = "rejected bytes: \(error) (nack \(nack.map { "\($0.reason)" } ?? "none"))"
        default: line = "\(report)"
        }
        reports.append(line)
        Log.info("session: \(line)")
    }
}
