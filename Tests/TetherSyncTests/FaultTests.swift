import Foundation
import LinkProtocol
import SyncContract
import Testing
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting
import TetherPrimitives
import TetherSettings

@Suite("failure classes: retry, back off, honour Retry-After, drain at once")
struct FaultTests {
    @Test("429 and 503 carry Retry-After into the failure, and the schedule waits at least that long")
    func retryAfter() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(20, devices: 1)
            let engine = try setup.engine()
            setup.server.faults.enqueue(.status(429, retryAfterSeconds: 7), scope: .push)
            let limited = await engine.sync(trigger: .manual)
            #expect(limited.failure?.kind == .rateLimited)
            #expect(limited.failure?.retryAfter == .seconds(7))
            var schedule = SyncSchedule(interval: .seconds(60), backoff: Backoff(base: .milliseconds(100), cap: .seconds(30)), debounce: .zero)
            var random = SplitMix64(seed: 5)
            schedule.started(at: .zero)
            #expect(schedule.finished(succeeded: false, retryAfter: limited.failure?.retryAfter, at: .seconds(1), using: &random) >= .seconds(8))
            setup.server.faults.enqueue(.status(503, retryAfterSeconds: 2), scope: .push)
            let unavailable = await engine.sync(trigger: .manual)
            #expect(unavailable.failure?.kind == .unavailable)
            #expect(unavailable.failure?.retryAfter == .seconds(2))
            #expect(unavailable.failure?.problem?.problemType == .unavailable)
            let healed = await engine.sync(trigger: .manual)
            #expect(healed.succeeded)
            #expect(try await setup.server.store.statistics(tenant: setup.tenant).events == 20)
        }
    }

    @Test("a slow server times out; the request it did apply comes back as duplicates, not doubles")
    func slowServer() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(50, devices: 1)
            let queued = try outboxCommands(setup)
            let engine = try setup.engine { $0.requestTimeout = .milliseconds(500) }
            setup.server.faults.enqueue(.delay(.seconds(2)), scope: .push)
            let slow = await engine.sync(trigger: .manual)
            #expect(slow.failure?.kind == .timeout)
            // The delayed request is still on the server: wait (bounded) until it has committed.
            let deadline = ContinuousClock.now + .seconds(20)
            while try await setup.server.store.statistics(tenant: setup.tenant).appliedCommands < queued, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            // Drained with the usual time-out: 500 ms is for the delayed request, and a loaded machine (every suite at
            // once beside VMs) once timed out the drain's own requests too.
            let reports = try await setup.drain(try setup.engine(seed: 43))
            #expect(reports.last?.succeeded == true, "\(reports.map { $0.failure.map { "\($0)" } ?? "ok" })")
            #expect(reports.totalDuplicates == queued, "the timed-out batch had been applied")
            #expect(try await setup.server.store.statistics(tenant: setup.tenant).appliedCommands == queued)
        }
    }

    @Test("the first success after an outage drains the whole queue at once, held commands included")
    func drainAfterOutage() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(400, devices: 2)
            let queued = try outboxCommands(setup)
            let engine = try setup.engine {
                $0.batchSize = 50
                $0.pushConcurrency = 1
            }
            setup.server.faults.enqueue(.dropBeforeHandling, scope: .push)
            let first = await engine.sync(trigger: .manual)
            #expect(first.failure?.kind == .network)
            #expect(try setup.outbox.counts().failed == 50, "the batch in flight went back to the queue")
            setup.server.faults.enqueue(.status(503), count: 3, scope: .push)
            for _ in 0..<3 {
                let probe = await engine.sync(trigger: .manual)
                #expect(probe.failure?.kind == .unavailable)
                #expect(probe.push.commandsSent == 0, "during an outage only a probe goes out")
            }
            let recovered = await engine.sync(trigger: .manual)
            #expect(recovered.succeeded)
            #expect(recovered.push.applied == queued, "one sync drained everything, the held batch too")
            #expect(try outboxCommands(setup) == 0)
        }
    }

    @Test("a server error halves the batches so one bad command cannot hold back the rest")
    func serverErrorShrinksBatches() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(300, devices: 1)
            let engine = try setup.engine { $0.batchSize = 200 }
            setup.server.faults.enqueue(.status(500), scope: .push)
            let failed = await engine.sync(trigger: .manual)
            #expect(failed.failure?.kind == .server)
            #expect(failed.push.largestBatch == 200)
            let reports = try await setup.drain(engine)
            #expect(reports.last?.succeeded == true)
            let later = reports.filter { $0.push.batches > 0 }
            #expect(later.first.map { $0.push.largestBatch <= 100 } == true, "the next batches were halved")
            #expect(try outboxCommands(setup) == 0)
            #expect(try await setup.server.store.statistics(tenant: setup.tenant).events == 300)
        }
    }

    @Test("a request larger than the server takes is split; a single command that is still too large is dead-lettered")
    func sizeRefusals() async throws {
        try await withSync(configureServer: {
            $0.limits.maximumCommandsPerPush = 40
            $0.limits.maximumRequestBytes = 4096
        }) { setup in
            try setup.gateway.storeEvents(200, devices: 2)
            // Desired settings with five 255-byte unknown records: about 5 KB of JSON in one command.
            let huge = try DeviceSettings(records: (6...10).map { SettingRecord(key: UInt8($0), value: Array(repeating: 200, count: 255)) })
            var random = SplitMix64(seed: 4)
            _ = try DeviceSettingsService(database: setup.gateway.database).changeDesired(
                serial: "TH-0000", to: huge, by: .technician, at: setup.clock.read(), using: &random)
            let queued = try outboxCommands(setup)
            let engine = try setup.engine { $0.batchSize = 500 }
            let report = await engine.sync(trigger: .manual)
            #expect(report.succeeded)
            #expect(report.push.applied == queued - 1)
            #expect(report.push.largestBatch == queued, "the first request carried everything and was refused")
            #expect(report.push.rejected == 1)
            let dead = try setup.outbox.commands(status: .deadLetter)
            #expect(dead.map(\.entityType) == [.deviceSettings])
            #expect(dead.first?.lastError?.contains("413") == true)
            #expect(try outboxCommands(setup) == 1, "only the dead letter is left")
        }
    }

    @Test("a wrong or revoked token is an authorization failure: commands wait, nothing is dead-lettered")
    func unauthorized() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(10, devices: 1)
            let engine = try SyncEngine(
                database: setup.gateway.database, configuration: setup.configuration { $0.token = BearerToken("tether_0000000000000000_" + String(repeating: "x", count: 43)) },
                now: setup.clock.read, seed: 1, logger: quietLogger)
            let report = await engine.sync(trigger: .manual)
            #expect(report.failure?.kind == .unauthorized)
            #expect(try setup.outbox.counts().deadLetter == 0)
            #expect(try setup.outbox.counts().total == 11)
            await engine.shutdown()
        }
    }
}
