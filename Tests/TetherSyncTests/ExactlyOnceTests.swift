import Foundation
import LinkProtocol
import SyncContract
import Testing
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting

@Suite("exactly once, end to end on loopback")
struct ExactlyOnceTests {
    @Test("a drain leaves the server with exactly the gateway's records and the outbox empty", arguments: ServerBackend.allCases)
    func cleanDrain(backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            try setup.gateway.storeEvents(3000, devices: 4)
            let queued = try outboxCommands(setup)
            #expect(queued == 3004, "3000 events and 4 devices")
            let engine = try setup.engine { $0.batchSize = 256 }
            let report = await engine.sync(trigger: .manual)
            #expect(report.succeeded, "\(String(describing: report.failure))")
            #expect(report.push.applied == queued)
            #expect(report.push.duplicates == 0)
            #expect(report.push.batches >= 12)
            #expect(try outboxCommands(setup) == 0)
            let statistics = try await setup.server.store.statistics(tenant: setup.tenant)
            #expect(statistics.events == 3000)
            #expect(statistics.devices == 4)
            #expect(statistics.appliedCommands == queued)
            let contents = try setup.gateway.database.contents()
            #expect(contents.events.count == 3000)
            #expect(contents.events.allSatisfy { $0.syncedAt != nil }, "every event is marked synced")
            let again = await engine.sync(trigger: .manual)
            #expect(again.succeeded)
            #expect(again.push.commandsSent == 0)
            await engine.shutdown()
        }
    }

    @Test("under 500, 503, 429, dropped connections (before and after the commit) and slow answers, nothing is lost or doubled", arguments: ServerBackend.allCases)
    func underFaults(backend: ServerBackend) async throws {
        try await withSync(backend) { setup in
            try setup.gateway.storeEvents(2000, devices: 5)
            let queued = try outboxCommands(setup)
            setup.server.faults.setRandom(
                rate: 0.35,
                palette: [
                    .status(500), .status(503, retryAfterSeconds: 0), .status(429, retryAfterSeconds: 0), .dropBeforeHandling, .dropAfterHandling,
                    .statusAfterHandling(500), .delay(.milliseconds(50)),
                ])
            let engine = try setup.engine { $0.batchSize = 40 }
            let reports = try await setup.drain(engine, attempts: 300)
            setup.server.faults.setRandom(rate: 0, palette: [])
            let final = await engine.sync(trigger: .manual)
            #expect(final.succeeded)
            #expect(try outboxCommands(setup) == 0, "the outbox drained")
            let statistics = try await setup.server.store.statistics(tenant: setup.tenant)
            #expect(statistics.events == 2000)
            #expect(statistics.devices == 5)
            #expect(statistics.appliedCommands == queued, "every command applied exactly once")
            #expect(reports.totalApplied + reports.totalDuplicates >= queued, "the gateway saw every command acknowledged")
            #expect(reports.totalApplied <= queued, "and none applied twice")
            #expect(reports.totalDuplicates > 0, "answers lost after the commit came back as duplicates")
            #expect(reports.contains { $0.failure?.kind == .server })
            #expect(reports.contains { $0.failure?.kind == .network })
            #expect(try setup.outbox.counts().deadLetter == 0)
            let injected = setup.server.faults.injected
            #expect(injected.contains(.dropAfterHandling))
            #expect(injected.count > 10)
        }
    }
}
