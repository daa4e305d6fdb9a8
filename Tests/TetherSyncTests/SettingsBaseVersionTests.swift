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

/// Issue 5, "409 → for device settings a three-way merge": a technician's change carries the server version it was
/// based on, so a pull that brings a newer server version before the change is pushed neither overwrites it nor
/// hides it from the server's conflict check.
@Suite("settings base version: a pull before the push of a technician's change, end to end")
struct SettingsBaseVersionTests {
    /// The backend sets sensitivity 7 and the gateway takes it; the technician then changes ledBrightness to 60;
    /// the backend changes `backendChange` while that change is still unsent, and the gateway pulls before it
    /// pushes. The technician's command is leased by the test while the engine syncs: the same situation as a push
    /// still in flight when the pull runs.
    private func raceTechnicianAgainstBackend(
        _ setup: SyncSetup, backendChange: SettingsDocument
    ) async throws -> (service: DeviceSettingsService, reports: [SyncReport]) {
        try setup.gateway.storeEvents(1, devices: 1)
        let serial = "TH-0000"
        let engine = try setup.engine()
        let store = setup.server.store
        #expect(await engine.sync(trigger: .manual).succeeded, "the server meets the device")
        _ = try await store.replaceDesiredSettings(tenant: setup.tenant, serial: serial, desired: SettingsDocument(sensitivity: 7), author: .backend, origin: nil, ifMatch: nil)
        _ = try await setup.drain(engine)
        #expect(try setup.outbox.counts().total == 0)
        let service = DeviceSettingsService(database: setup.gateway.database)
        #expect(try service.settings(serial: serial)?.desiredSettings?.sensitivity == 7)

        var random = SplitMix64(seed: 5)
        _ = try service.changeDesired(serial: serial, to: DeviceSettings(ledBrightness: 60), by: .technician, at: setup.clock.read(), using: &random)
        let inFlight = try setup.outbox.claim(limit: 10, now: setup.clock.read(), using: &random)
        #expect(inFlight.count == 1, "the technician's command is the only one queued")

        _ = try await store.replaceDesiredSettings(tenant: setup.tenant, serial: serial, desired: backendChange, author: .backend, origin: nil, ifMatch: nil)
        let pulled = await engine.sync(trigger: .manual)
        #expect(pulled.succeeded)
        #expect(pulled.push.commandsSent == 0, "the technician's command was not pushed before the pull")
        let afterPull = try #require(try service.settings(serial: serial))
        #expect(afterPull.desiredSettings?.ledBrightness == 60, "the pull did not overwrite the technician's value")
        #expect(afterPull.desiredChangedBy == .technician, "the pull did not re-mark the change as the backend's")

        // The lease expires (drain moves the clock an hour per round) and the change is pushed on its old base.
        setup.clock.advance(by: .seconds(3600))
        let reports = try await setup.drain(engine)
        #expect(reports.last?.succeeded == true)
        #expect(try setup.outbox.counts().total == 0, "nothing left queued")
        return (service, reports)
    }

    @Test("different settings: the 409 merges them, and the server and the gateway hold both changes")
    func differentSettingsMerge() async throws {
        try await withSync { setup in
            let (service, reports) = try await raceTechnicianAgainstBackend(setup, backendChange: SettingsDocument(sensitivity: 7, hapticFeedback: true))
            #expect(reports.contains { $0.push.conflicts >= 1 }, "the server answered 409 to the stale base")
            #expect(reports.contains { $0.push.settingsMerged == 1 })
            let server = try #require(try await setup.server.store.settings(tenant: setup.tenant, serial: "TH-0000"))
            #expect(server.desired == SettingsDocument(sensitivity: 7, ledBrightness: 60, hapticFeedback: true))
            #expect(server.changedBy == .technician)
            let local = try #require(try service.settings(serial: "TH-0000"))
            #expect(local.desiredSettings == DeviceSettings(sensitivity: 7, ledBrightness: 60, hapticFeedback: true))
            #expect(try service.conflicts().isEmpty)
        }
    }

    @Test("the same setting: the 409 leaves a visible conflict holding both values; nothing is lost")
    func sameSettingConflicts() async throws {
        try await withSync { setup in
            let (service, reports) = try await raceTechnicianAgainstBackend(setup, backendChange: SettingsDocument(sensitivity: 7, ledBrightness: 30))
            #expect(reports.contains { $0.push.conflicts >= 1 }, "the server answered 409 to the stale base")
            let conflicts = try service.conflicts()
            #expect(conflicts.map(\.serial) == ["TH-0000"])
            let conflict = try #require(conflicts.first?.conflicts.first)
            #expect(conflict.key == DeviceSettings.Key.ledBrightness)
            #expect(conflict.base == nil, "ledBrightness was unset at the technician's base")
            #expect(conflict.desired == [60], "the technician's value is kept in the conflict")
            #expect(conflict.reported == [30], "the server's value is kept in the conflict")
            let server = try #require(try await setup.server.store.settings(tenant: setup.tenant, serial: "TH-0000"))
            #expect(server.desired?.ledBrightness == 30, "the server keeps its value until someone resolves the conflict")
            #expect(server.desired?.sensitivity == 7)
        }
    }
}
