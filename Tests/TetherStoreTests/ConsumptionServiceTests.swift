import TetherDeviceModel
import Foundation
import GRDB
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives
import TetherSettings

@Suite("ConsumptionService: events and their outbox commands, one transaction")
struct ConsumptionServiceTests {
    struct InjectedFault: Error {}

    @Test("an event and its create command are stored together; a duplicate is recognised and stored once")
    func storeAndDeduplicate() throws {
        let database = try GatewayDatabase.inMemory()
        let service = ConsumptionService(database: database)
        let first = try store([.deviceInfo(deviceInfo("S1"), negotiatedVersion: 2), .hit(hit("S1", sequence: 0)), .hit(hit("S1", sequence: 1))], in: service)
        #expect(first.storedEvents.map(\.sequence) == [0, 1])
        #expect(first.duplicateEvents.isEmpty)

        let again = try store([.hit(hit("S1", sequence: 1)), .hit(hit("S1", sequence: 2))], id: 2, in: service)
        #expect(again.storedEvents.map(\.sequence) == [2])
        #expect(again.duplicateEvents.map(\.sequence) == [1])

        let contents = try database.contents()
        #expect(contents.events.map(\.sequence) == [0, 1, 2])
        let creates = contents.outbox.filter { $0.entityType == .consumptionEvent }
        #expect(creates.map(\.entityId) == ["S1/1/0", "S1/1/1", "S1/1/2"])
        #expect(creates.allSatisfy { $0.operation == .create && $0.status == .pending })
        #expect(Set(contents.outbox.map(\.id)).count == contents.outbox.count)
        #expect(contents.devices.map(\.protocolVersion) == [2])
        #expect(contents.boots.map(\.bootCounter) == [1])
        // The payload is valid JSON with the event's identity and raw time.
        let payload = try #require(creates.first?.payload.data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        #expect(object["serial"] as? String == "S1")
        #expect(object["ticks"] as? Int == 1000)
        #expect(object["utcNanoseconds"] is NSNull)
    }

    @Test("a failure between the entity write and the outbox write leaves neither", arguments: ["event", "device", "battery", "retime"])
    func atomicity(_ kind: String) throws {
        let database = try GatewayDatabase.inMemory()
        var service = ConsumptionService(database: database)
        try store([.deviceInfo(deviceInfo("OLD"), negotiatedVersion: 1), .hit(hit("OLD", sequence: 0))], in: service)
        let before = try database.contents()

        service.faults.afterEntityWrite = { _ in throw InjectedFault() }
        let items: [PersistItem]
        switch kind {
        case "event": items = [.hit(hit("OLD", sequence: 1))]
        case "device": items = [.deviceInfo(deviceInfo("NEW"), negotiatedVersion: 1)]
        case "battery": items = [.battery(serial: "OLD", BatteryStatus(millivolts: 3700, percent: 50, isCharging: false), receivedAt: simulationStart)]
        default: items = [.anchor(serial: "OLD", anchor(ticks: 100, utc: simulationStart))]
        }
        #expect(throws: StoreError.self) { try store(items, id: 2, in: service) }
        #expect(try database.contents() == before)
    }

    @Test("an anchor derives the time of its boot's events; a pending create absorbs the update")
    func anchorRetimesEvents() throws {
        let database = try GatewayDatabase.inMemory()
        let service = ConsumptionService(database: database)
        let outbox = Outbox(database: database)
        try store([.hit(hit("T", sequence: 0, ticks: 10_000)), .hit(hit("T", sequence: 1, ticks: 20_000)), .hit(hit("T", boot: 2, sequence: 0, ticks: 5000))], in: service)
        let truth = simulationStart.advanced(by: .seconds(100))
        let outcome = try store([.anchor(serial: "T", anchor(ticks: 30_000, utc: truth))], id: 2, in: service)
        #expect(outcome.anchorsStored == 1)
        #expect(outcome.retimedEvents == 2)  // boot 1 only (§9.6)

        let event = try #require(try service.event(EventKey(serial: "T", bootCounter: 1, sequence: 0)))
        let time = try #require(event.time)
        #expect(time.utcNanoseconds == truth.nanoseconds - 20_000_000_000)  // nominal slope with one anchor (§9.4)
        #expect(time.uncertaintyNanoseconds == 4_000_000 + 4_000_000)  // 4 ms + 20 s · 200 ppm (§9.5)
        #expect(try service.event(EventKey(serial: "T", bootCounter: 2, sequence: 0))?.time == nil)

        // Still one create per event, now carrying the time.
        let commands = try outbox.commands(for: .consumptionEvent(EventKey(serial: "T", bootCounter: 1, sequence: 0)))
        #expect(commands.map(\.operation) == [.create])
        #expect(commands.first?.payload.contains(#""utcNanoseconds":\#(time.utcNanoseconds)"#) == true)

        // Once the create is out, a better anchor queues an update behind it.
        var random = SplitMix64(seed: 1)
        _ = try outbox.claim(limit: 100, now: truth, using: &random)
        let second = try store([.anchor(serial: "T", anchor(ticks: 40_000, utc: truth.advanced(by: .seconds(10)), uncertainty: .milliseconds(1)))], id: 3, in: service)
        #expect(second.retimedEvents == 2)
        #expect(try outbox.commands(for: .consumptionEvent(EventKey(serial: "T", bootCounter: 1, sequence: 0))).map(\.operation) == [.create, .update])

        // The same anchor again (a replay) changes nothing.
        let replayed = try store([.anchor(serial: "T", anchor(ticks: 40_000, utc: truth.advanced(by: .seconds(10)), uncertainty: .milliseconds(1)))], id: 4, in: service)
        #expect(replayed.anchorsStored == 0 && replayed.retimedEvents == 0)
    }

    @Test("replaying the same batches into the same database adds nothing")
    func replayIsIdempotent() throws {
        let directory = try TemporaryDirectory()
        let database = try GatewayDatabase(path: directory.file("replay.sqlite"))
        let batches: [PersistBatch] = [
            PersistBatch(id: 1, items: [.deviceInfo(deviceInfo("R"), negotiatedVersion: 1)]),
            PersistBatch(id: 2, items: [.hit(hit("R", sequence: 0, at: simulationStart.plus(milliseconds: 40))), .hit(hit("R", sequence: 1, at: simulationStart.plus(milliseconds: 80)))]),
            PersistBatch(id: 3, items: [.anchor(serial: "R", anchor(ticks: 900, utc: simulationStart.plus(milliseconds: 90)))]),
            PersistBatch(id: 4, items: [.reportedConfig(serial: "R", DeviceConfig(version: 3, settings: DeviceSettings(sensitivity: 4)))]),
            PersistBatch(id: 5, items: [
                .battery(serial: "R", BatteryStatus(millivolts: 3800, percent: 70, isCharging: true), receivedAt: simulationStart.plus(milliseconds: 95)),
                .sleep(serial: "R", SleepNotice(reason: .idle, wakeAfterSeconds: nil), receivedAt: simulationStart.plus(milliseconds: 99)),
            ]),
        ]
        func replay() throws -> StoreContents {
            let replayStore = ReplayStore(database: database, start: simulationStart)
            for batch in batches { #expect(replayStore.store(batch)) }
            return try database.contents()
        }
        let first = try replay()
        let second = try replay()
        #expect(first == second)
        #expect(first.counts.map(\.rows) == [1, 1, 1, 2, 2, 1, 6, 0])
        #expect(first.rendered() == second.rendered())
    }

    @Test("a restarted gateway gets the dedup history and anchors back from the tables")
    func sessionSeed() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("seed.sqlite")
        do {
            let service = ConsumptionService(database: try GatewayDatabase(path: path))
            try store([.deviceInfo(deviceInfo("H", boot: 3), negotiatedVersion: 1)] + (0..<5).map { .hit(hit("H", boot: 3, sequence: $0)) }, in: service)
            try store([.hit(hit("H", boot: 3, sequence: 7, ticks: 99_000)), .anchor(serial: "H", anchor(boot: 3, ticks: 120_000, utc: simulationStart))], id: 2, in: service)
            try store([.hit(hit("H", boot: 2, sequence: 0))], id: 3, in: service)
        }
        let service = ConsumptionService(database: try GatewayDatabase(path: path))
        let seed = try service.sessionSeed(serial: "H")
        #expect(seed.history.serial == "H")
        #expect(seed.history.latestBoot == 3)
        let boot3 = try #require(seed.history.boots[3])
        #expect(boot3.storedThrough == 4)
        #expect(boot3.storedAbove == [7])
        #expect(boot3.highestSequence == 7)
        #expect(boot3.highestTicks == 120_000)
        #expect(seed.history.isStored(EventKey(serial: "H", bootCounter: 2, sequence: 0)))
        #expect(!seed.history.isStored(EventKey(serial: "H", bootCounter: 3, sequence: 5)))
        #expect(seed.clock.hasAnchor(boot: 3))
        #expect(!seed.clock.hasAnchor(boot: 2))
        #expect(try service.sessionSeed(serial: "never-seen").history == DeviceHistory(serial: "never-seen"))
        #expect(try service.sessionSeed(address: "AA:BB:CC:DD:EE:FF") == nil)
    }

    @Test("dedup across a restart: what was committed before the crash is ACKed again, never stored twice", arguments: [false, true])
    func dedupAcrossRestart(afterCommit: Bool) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("restart.sqlite")
        var pair = try StoreLinkPair(profile: .v1_4(serial: "TT-RESTART"), service: ConsumptionService(database: try GatewayDatabase(path: path)))
        pair.scheduleHits(count: 60, every: .milliseconds(40), from: simulationStart.advanced(by: .seconds(1)))
        // Crash while events are being stored: the store has been asked, no ACK has gone out.
        pair.run(until: simulationStart.advanced(by: .seconds(2)))
        while pair.eventsBeingStored == 0 { pair.run(for: .milliseconds(1)) }
        let storedBeforeCrash = try pair.service.eventCount()
        #expect(storedBeforeCrash > 0)
        try pair.crashGateway(afterCommit: afterCommit)
        #expect(try pair.service.eventCount() > storedBeforeCrash || !afterCommit)
        // A new process opens the same file.
        pair.runUntilSettled(limit: .seconds(60))
        #expect(pair.isSettled)
        #expect(pair.releasedBeforeStored.isEmpty)
        #expect(pair.created.count == 60)
        let service = ConsumptionService(database: try GatewayDatabase(path: path))
        #expect(try service.eventCount(serial: "TT-RESTART") == 60)
        let creates = try Outbox(database: service.database).commands(status: .pending, limit: 1000).filter { $0.entityType == .consumptionEvent }
        #expect(creates.count == 60)
        if afterCommit {
            // The device re-sent what the dead gateway had stored but not ACKed; the restored history knew them.
            #expect(pair.reports.contains { if case .duplicate = $0 { true } else { false } })
        }
    }
}
