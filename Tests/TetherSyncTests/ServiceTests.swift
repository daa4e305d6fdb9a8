import Foundation
import LinkProtocol
import ServiceLifecycle
import SyncContract
import Testing
import TetherServer
import TetherStore
import TetherSync
import TetherSyncTesting
import TetherTestSupport
import TetherPrimitives
import TetherSettings

@Suite("the sync service: triggers, one sync at a time, graceful stop", .serialized)
struct ServiceTests {
    @Test("startup, a local write, manual and reconnect each start a sync; the interval does on the clock's word")
    func triggers() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(5, devices: 1)
            let clock = ManualClock()
            let engine = try setup.engine {
                $0.interval = .seconds(600)
                $0.localWriteDebounce = .zero
            }
            let service = SyncService(engine: engine, clock: clock, seed: 1, logger: quietLogger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                var reports = service.reports.makeAsyncIterator()
                let startup = try #require(await reports.next())
                #expect(startup.trigger == .startup)
                #expect(startup.push.applied == 6)

                try setup.gateway.storeEvents(3, devices: 1)
                service.localWrite()
                let written = try #require(await reports.next())
                #expect(written.trigger == .localWrite)
                #expect(written.push.applied == 3)

                let manual = await service.syncNow()
                #expect(manual.trigger == .manual)
                #expect(try #require(await reports.next()).trigger == .manual)

                setup.server.faults.enqueue(.status(503), count: 1, scope: .push)
                try setup.gateway.storeEvents(2, devices: 1)
                service.localWrite()
                let failed = try #require(await reports.next())
                #expect(failed.failure?.kind == .unavailable)
                #expect(service.status.consecutiveFailures == 1)
                service.reconnect()
                let reconnected = try #require(await reports.next())
                #expect(reconnected.trigger == .reconnect, "reconnect does not wait out the backoff")
                #expect(reconnected.succeeded)
                #expect(reconnected.push.applied == 2)
                #expect(service.status.consecutiveFailures == 0)

                // Nothing happens until the interval elapses on the clock.
                let armed = ContinuousClock.now + .seconds(10)
                while clock.nextDeadline == nil, ContinuousClock.now < armed { try await Task.sleep(for: .milliseconds(5)) }
                #expect(clock.nextDeadline != nil, "a timer is armed (the earliest one wakes the service, which re-arms for what is due)")
                clock.advance(by: .seconds(600))
                let interval = try #require(await reports.next())
                #expect(interval.trigger == .interval)
                #expect(service.status.totals.syncs == 6)
                #expect(service.status.lastSuccessAt != nil)
                group.cancelAll()
            }
            #expect(try await setup.server.store.statistics(tenant: setup.tenant).events == 10)
        }
    }

    /// The service waits for one deadline at a time: a local write that makes the next sync due earlier replaces the
    /// armed timer. Each arm was once a child task of a group that nothing awaited, and a replaced timer slept on to
    /// its own deadline: the soak saw tetherd grow by hundreds of MB within minutes (heaptrack: 120,000 timer tasks a
    /// minute, all kept).
    @Test("one timer at a time: a sync due earlier replaces the armed timer instead of adding one")
    func oneTimerAtATime() async throws {
        try await withSync { setup in
            let clock = ManualClock()
            let engine = try setup.engine {
                $0.interval = .seconds(600)
                $0.localWriteDebounce = .seconds(5)
            }
            let service = SyncService(engine: engine, clock: clock, seed: 1, logger: quietLogger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                var reports = service.reports.makeAsyncIterator()
                _ = try #require(await reports.next())  // the startup sync
                try await waitUntil("the interval's timer armed") { clock.sleeperCount == 1 && clock.nextDeadline != nil }
                let intervalDeadline = clock.nextDeadline
                try setup.gateway.storeEvents(5, devices: 1)
                for _ in 0..<5 { service.localWrite() }
                try await waitUntil("the debounce's timer armed in its place") { clock.nextDeadline != intervalDeadline }
                try await waitUntil("one timer waiting, not one per arm") { clock.sleeperCount == 1 }
                clock.advance(by: .seconds(5))
                let written = try #require(await reports.next())
                #expect(written.trigger == .localWrite)
                #expect(written.push.applied == 6)  // the five events and their device's record
                group.cancelAll()
            }
        }
    }

    @Test("every subscriber hears each finished sync; the status snapshot carries its result, counts and dead letters")
    func finishedEventsAndStatus() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(4, devices: 1)
            let engine = try setup.engine {
                $0.interval = .seconds(600)
                $0.localWriteDebounce = .zero
            }
            let service = SyncService(engine: engine, clock: ManualClock(), seed: 1, logger: quietLogger)
            // Subscribed before the service runs, so both hear the startup sync.
            var first = service.finishedEvents().makeAsyncIterator()
            var second = service.finishedEvents().makeAsyncIterator()
            #expect(service.status.lastResult == nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                let startup = try #require(await first.next())
                #expect(try #require(await second.next()).report == startup.report)
                #expect(startup.report.trigger == .startup)
                #expect(startup.status.lastResult?.succeeded == true)
                #expect(startup.status.lastResult?.pushed == 5)
                #expect(startup.status.outbox?.total == 0)
                #expect(startup.status.running == nil)

                // A settings change for a device the backend deleted: the backend refuses it for good.
                #expect(try await setup.server.store.deleteDevice(tenant: setup.tenant, serial: "TH-0000") != nil)
                var random = SplitMix64(seed: 3)
                _ = try DeviceSettingsService(database: setup.gateway.database)
                    .changeDesired(serial: "TH-0000", to: DeviceSettings(ledBrightness: 10), by: .technician, at: setup.clock.read(), using: &random)
                let manual = await service.syncNow()
                let event = try #require(await first.next())
                #expect(event.report == manual)
                #expect(try #require(await second.next()).report == manual)
                let status = service.status
                #expect(status.lastResult == SyncResult(manual, finishedAt: try #require(status.lastResult?.finishedAt)))
                #expect(status.outbox?.deadLetter == 1)
                #expect(status.totals.syncs == 2)
                #expect(status.totals.rejected == 1)
                #expect(status.totals.commandsPushed == 6)
                #expect(status.totals.changesPulled == manual.pull.changes + startup.report.pull.changes)
                #expect(status.lastSuccessAt != nil)
                group.cancelAll()
            }
            #expect(await first.next() == nil, "the stream ends when the service stops")
            var late = service.finishedEvents().makeAsyncIterator()
            #expect(await late.next() == nil, "subscribing after the stop ends at once")
        }
    }

    @Test("calls that overlap run one after the other")
    func oneAtATime() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(300, devices: 3)
            let queued = try outboxCommands(setup)
            let engine = try setup.engine { $0.batchSize = 20 }
            let reports = await withTaskGroup(of: SyncReport.self) { group in
                for _ in 0..<4 { group.addTask { await engine.sync(trigger: .manual) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(reports.count == 4)
            #expect(reports.allSatisfy { $0.succeeded })
            #expect(reports.map(\.push.applied).sorted() == [0, 0, 0, queued], "one sync drained everything; the others found nothing")
            #expect(reports.map(\.push.duplicates).reduce(0, +) == 0)
            await engine.shutdown()
        }
    }

    @Test("graceful shutdown stops the service and answers anyone waiting")
    func gracefulShutdown() async throws {
        try await withSync { setup in
            let engine = try setup.engine { $0.interval = .seconds(600) }
            let service = SyncService(engine: engine, clock: ManualClock(), seed: 1, logger: quietLogger)
            let group = ServiceGroup(configuration: .init(services: [service], logger: quietLogger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                var reports = service.reports.makeAsyncIterator()
                #expect(try #require(await reports.next()).succeeded)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            #expect(service.status.totals.syncs == 1)
        }
    }
}
