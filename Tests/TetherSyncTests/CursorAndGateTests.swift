import Foundation
import Hummingbird
import LinkProtocol
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import SyncContract
import Testing
import TetherStore
import TetherSync
import TetherSyncTesting

/// A server that answers pushes honestly (nothing to push) and pulls with whatever page the test sets.
final class LyingServer: Sendable {
    final class Pages: Sendable {
        let byCursor = Mutex<[String: ChangePage]>([:])
    }

    let pages = Pages()
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    init() async throws {
        let router = Router()
        let pages = pages
        router.post("/v1/commands") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let push = try JSONDecoder().decode(PushRequest.self, from: Data(body.readableBytesView))
            let results = push.commands.map { CommandResult.applied($0.id) }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(PushResponse(results: results)))))
        }
        router.get("/v1/changes") { request, _ -> Response in
            let after = request.uri.queryParameters["after"].map(String.init) ?? "start"
            guard let page = pages.byCursor.withLock({ $0[after] ?? $0["*"] }) else { return Response(status: .notFound) }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(page))))
        }
        let (ports, announce) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), onServerRunning: { announce.yield($0.localAddress?.port ?? 0) }, logger: quietLogger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: quietLogger))
        self.group = group
        task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        port = await iterator.next() ?? 0
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        // A graceful shutdown ends `run()` normally; an error there (the server failed) must fail the test.
        do {
            try await task.value
        } catch {
            Issue.record("the fake server's service group threw: \(error)")
        }
    }

    func serve(_ page: ChangePage, after: String = "*") { pages.byCursor.withLock { $0[after] = page } }
}

@Suite("cursors and the integrity gate")
struct CursorAndGateTests {
    static func settingsChange(_ serial: String, version: Int64, sensitivity: Int) -> Change {
        Change(kind: .deviceSettings, operation: .upsert, serial: serial, version: version, settings: .init(desired: SettingsDocument(sensitivity: sensitivity), changedBy: .backend))
    }

    func withLyingServer(_ body: (LyingServer, GatewayFixture, SyncEngine) async throws -> Void) async throws {
        let server = try await LyingServer()
        let gateway = try GatewayFixture()
        try gateway.storeEvents(0, devices: 1)
        let engine = try SyncEngine(
            database: gateway.database, configuration: SyncConfiguration(baseURL: "http://127.0.0.1:\(server.port)", token: BearerToken("t")), seed: 1,
            logger: quietLogger)
        do {
            try await body(server, gateway, engine)
        } catch {
            await engine.shutdown()
            await server.stop()
            throw error
        }
        await engine.shutdown()
        await server.stop()
    }

    @Test("the stored cursor refuses to move backward")
    func storeRefusesBackward() throws {
        let gateway = try GatewayFixture()
        defer { gateway.remove() }
        let cursor = FeedCursor(cursors: SyncCursors(database: gateway.database), name: "feed")
        #expect(try cursor.current() == .start)
        try cursor.advance(to: SyncCursor(sequence: 10), at: GatewayFixture.start)
        try cursor.advance(to: SyncCursor(sequence: 10), at: GatewayFixture.start)
        #expect(throws: StoreError.self) { try cursor.advance(to: SyncCursor(sequence: 9), at: GatewayFixture.start) }
        #expect(try cursor.current() == SyncCursor(sequence: 10))
    }

    @Test("a server that sends the cursor backward is refused; the gateway keeps its cursor")
    func serverSendsCursorBackward() async throws {
        try await withLyingServer { server, gateway, engine in
            let change = Self.settingsChange("TH-0000", version: 1, sensitivity: 4)
            server.serve(ChangePage(changes: [change], nextCursor: SyncCursor(sequence: 50), hasMore: false), after: "start")
            #expect(await engine.sync(trigger: .manual).succeeded)
            let committed = try await engine.committedCursor()
            #expect(committed == SyncCursor(sequence: 50))
            server.serve(ChangePage(changes: [], nextCursor: SyncCursor(sequence: 20), hasMore: false), after: "c1.50")
            let report = await engine.sync(trigger: .manual)
            #expect(report.failure?.kind == .integrity)
            #expect(report.gateViolations.map(\.rule) == [.cursor])
            let kept = try await engine.committedCursor()
            #expect(kept == SyncCursor(sequence: 50), "the cursor did not move backward")
        }
    }

    @Test("a failing gate (bad checksum, bad count, dangling reference) keeps the cursor and applies nothing; a good page then passes")
    func failingGateKeepsCursor() async throws {
        try await withLyingServer { server, gateway, engine in
            let settings = DeviceSettingsService(database: gateway.database)
            let good = ChangePage(changes: [Self.settingsChange("TH-0000", version: 1, sensitivity: 6)], nextCursor: SyncCursor(sequence: 7), hasMore: false)
            var badChecksum = good
            badChecksum.changes[0].settings?.desired.sensitivity = 9  // altered in flight: the checksum no longer matches
            var badCount = good
            badCount.count = 2
            let dangling = ChangePage(changes: [Self.settingsChange("NEVER-SEEN", version: 1, sensitivity: 2)], nextCursor: SyncCursor(sequence: 7), hasMore: false)
            for (page, rule) in [(badChecksum, GateViolation.Rule.checksum), (badCount, .count), (dangling, .danglingReference)] {
                server.serve(page)
                let report = await engine.sync(trigger: .manual)
                #expect(report.failure?.kind == .integrity)
                #expect(report.gateViolations.map(\.rule) == [rule])
                let committed = try await engine.committedCursor()
                #expect(committed == .start)
                #expect(try settings.settings(serial: "TH-0000")?.desiredSettings == nil, "nothing from a refused page was applied")
            }
            server.serve(good)
            let report = await engine.sync(trigger: .manual)
            #expect(report.succeeded)
            #expect(report.pull.applied == 1)
            let committed = try await engine.committedCursor()
            #expect(committed == SyncCursor(sequence: 7))
            #expect(try settings.settings(serial: "TH-0000")?.desiredSettings?.sensitivity == 6)
        }
    }

    @Test("the gate's rules on their own")
    func gateRules() {
        let device = Change(kind: .device, operation: .upsert, serial: "NEW", version: 1, device: DevicePayload(serial: "NEW", pairingState: .paired))
        let settings = Self.settingsChange("NEW", version: 1, sensitivity: 3)
        let known: (String) -> IntegrityGate.DeviceKnowledge = { _ in .unknown }
        #expect(IntegrityGate.check(ChangePage(changes: [device, settings], nextCursor: SyncCursor(sequence: 2), hasMore: false), requestedAfter: .start, knowledge: known).isEmpty,
            "a device introduced earlier in the page is not dangling")
        let deleted = Change(kind: .device, operation: .delete, serial: "NEW", version: 2)
        let afterDelete = IntegrityGate.check(
            ChangePage(changes: [device, deleted, settings], nextCursor: SyncCursor(sequence: 3), hasMore: false), requestedAfter: .start, knowledge: known)
        #expect(afterDelete.map(\.rule) == [.danglingReference])
        var malformed = settings
        malformed.settings?.desired.sensitivity = 44
        let invalid = IntegrityGate.check(ChangePage(changes: [device, malformed], nextCursor: SyncCursor(sequence: 2), hasMore: false), requestedAfter: .start, knowledge: known)
        #expect(invalid.map(\.rule) == [.malformedChange])
        var unreadable = ChangePage(changes: [], nextCursor: .start, hasMore: false)
        unreadable.nextCursor = "elsewhere"
        #expect(IntegrityGate.check(unreadable, requestedAfter: .start, knowledge: known).map(\.rule) == [.cursor])
    }
}
