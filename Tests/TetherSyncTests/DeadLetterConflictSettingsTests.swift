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

@Suite("dead letters, conflicts and settings, end to end")
struct DeadLetterConflictSettingsTests {
    @Test("a command the server rejects is dead-lettered with the reason; the rest go through")
    func deadLetter() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(10, devices: 2)
            let engine = try setup.engine()
            #expect(await engine.sync(trigger: .manual).succeeded)
            #expect(try await setup.server.store.deleteDevice(tenant: setup.tenant, serial: "TH-0001") != nil)
            var random = SplitMix64(seed: 3)
            _ = try DeviceSettingsService(database: setup.gateway.database)
                .changeDesired(serial: "TH-0001", to: DeviceSettings(ledBrightness: 10), by: .technician, at: setup.clock.read(), using: &random)
            try setup.gateway.storeEvents(5, devices: 2)
            let report = await engine.sync(trigger: .manual)
            #expect(report.succeeded)
            #expect(report.push.rejected == 1)
            #expect(report.push.applied == 5)
            let dead = try setup.outbox.commands(status: .deadLetter)
            #expect(dead.count == 1)
            #expect(dead.first?.entityType == .deviceSettings)
            #expect(dead.first?.lastError?.hasPrefix("rejected: device TH-0001 was deleted") == true)
            #expect(try setup.outbox.counts().deadLetter == 1)
            #expect(try DeviceRegistry(database: setup.gateway.database).device(serial: "TH-0001")?.pairingState == .unpaired,
                "the pulled deletion released the device here")
        }
    }

    @Test("an event that conflicts with the server's is parked for a technician, visible in the outbox and the report")
    func conflictParked() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(6, devices: 2)
            let other = API(baseURL: setup.server.baseURL, token: try await setup.server.token(tenant: setup.tenant, gateway: "gw-2"))
            let clash = PushCommand(
                id: UUID(), entityType: .consumptionEvent, entityID: "TH-0000/1/0", operation: .create,
                payload: .consumptionEvent(EventPayload(
                    serial: "TH-0000", bootCounter: 1, sequence: 0, ticks: 1000, utcNanoseconds: nil, uncertaintyNanoseconds: nil, durationMilliseconds: 1,
                    intensity: 99, receivedAt: 1)))
            #expect(try await other.push([clash]).status == 200)
            let engine = try setup.engine()
            let report = await engine.sync(trigger: .manual)
            #expect(report.succeeded)
            #expect(report.push.conflicts == 1)
            let parked = try setup.outbox.commands(status: .conflict)
            #expect(parked.map(\.entityId) == ["TH-0000/1/0"])
            #expect(parked.first?.lastError?.contains("exists with different content") == true)
            #expect(try setup.outbox.counts().conflict == 1)
            #expect(try await setup.server.store.statistics(tenant: setup.tenant).events == 6)
        }
    }

    @Test("backend settings reach the gateway; a technician's change on a stale base is merged three ways and converges")
    func settingsRoundTrip() async throws {
        try await withSync { setup in
            try setup.gateway.storeEvents(1, devices: 1)
            let serial = "TH-0000"
            let engine = try setup.engine()
            #expect(await engine.sync(trigger: .manual).succeeded)
            let store = setup.server.store
            _ = try await store.replaceDesiredSettings(tenant: setup.tenant, serial: serial, desired: SettingsDocument(sensitivity: 7), author: .backend, origin: nil, ifMatch: nil)
            let pulled = await engine.sync(trigger: .manual)
            #expect(pulled.succeeded)
            #expect(pulled.pull.applied == 1)
            let service = DeviceSettingsService(database: setup.gateway.database)
            #expect(try service.settings(serial: serial)?.desiredSettings?.sensitivity == 7, "backend settings reached the gateway")
            #expect(try service.settings(serial: serial)?.desiredChangedBy == .backend)
            // The backend changes another setting while a technician changes a third on the gateway.
            _ = try await store.replaceDesiredSettings(
                tenant: setup.tenant, serial: serial, desired: SettingsDocument(sensitivity: 7, ledBrightness: 60), author: .backend, origin: nil, ifMatch: nil)
            var random = SplitMix64(seed: 9)
            _ = try service.changeDesired(serial: serial, to: DeviceSettings(hapticFeedback: true), by: .technician, at: setup.clock.read(), using: &random)
            let reports = try await setup.drain(engine, attempts: 5)
            #expect(reports.contains { $0.push.settingsMerged == 1 }, "the conflict was merged")
            #expect(reports.last?.succeeded == true)
            #expect(try setup.outbox.counts().total == 0)
            let server = try #require(try await store.settings(tenant: setup.tenant, serial: serial))
            #expect(server.desired == SettingsDocument(sensitivity: 7, ledBrightness: 60, hapticFeedback: true))
            #expect(server.changedBy == .technician)
            let local = try #require(try service.settings(serial: serial)?.desiredSettings)
            #expect(local == DeviceSettings(sensitivity: 7, ledBrightness: 60, hapticFeedback: true))
        }
    }

    @Test("a device the gateway meets late gets its settings by ETag: fetched once, then 304")
    func refreshSettings() async throws {
        try await withSync { setup in
            let other = API(baseURL: setup.server.baseURL, token: try await setup.server.token(tenant: setup.tenant, gateway: "gw-2"))
            _ = try await other.push([PushCommand(
                id: UUID(), entityType: .device, entityID: "TH-0000", operation: .update,
                payload: .device(DevicePayload(serial: "TH-0000", capabilities: 1, pairingState: .paired)))])
            _ = try await setup.server.store.replaceDesiredSettings(
                tenant: setup.tenant, serial: "TH-0000", desired: SettingsDocument(dailyLimit: 30), author: .backend, origin: nil, ifMatch: nil)
            let engine = try setup.engine()
            #expect(await engine.sync(trigger: .manual).succeeded, "settings for a device not met here are not dangling")
            try setup.gateway.storeEvents(1, devices: 1)
            let fetched = try await engine.refreshSettings(serial: "TH-0000")
            #expect(fetched)
            #expect(try DeviceSettingsService(database: setup.gateway.database).settings(serial: "TH-0000")?.desiredSettings?.dailyLimit == 30)
            let refetched = try await engine.refreshSettings(serial: "TH-0000")
            #expect(!refetched, "the second fetch is a 304")
        }
    }
}
