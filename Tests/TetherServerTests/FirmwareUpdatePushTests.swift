import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

/// The `firmwareUpdate` entity (docs/specs/sync-api.yaml, "Push semantics"): a gateway reports each firmware update's
/// end once; the server keeps it as history.
@Suite("push: firmware updates' endings are recorded once and never changed")
struct FirmwareUpdatePushTests {
    @Test("create records the update and makes its unknown device; the same again is a duplicate, other content a conflict", arguments: ServerBackend.allCases)
    func createOnce(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let confirmed = Commands.firmwareUpdate(serial: "TH-9")
            var retried = confirmed
            retried.id = UUID()
            let other = Commands.firmwareUpdate(uid: confirmed.entityID, serial: "TH-9", outcome: .reverted)
            let results = try await api.push([confirmed, retried, other, confirmed]).decode(PushResponse.self).results
            #expect(results.map(\.status) == [.applied, .duplicate, .conflict, .duplicate])
            let serverValue = try #require(results[2].conflict?.serverValue).decode(FirmwareUpdatePayload.self)
            #expect(serverValue.outcome == .confirmed)
            let rows = try await server.store.firmwareUpdates(tenant: "tenant-a", address: nil)
            #expect(rows.count == 1)
            guard case .firmwareUpdate(let sent) = confirmed.payload else { Issue.record("not a firmware update"); return }
            #expect(rows.first?.document == sent)
            #expect(rows.first?.gateway == "gw-1")
            #expect(try await server.store.firmwareUpdates(tenant: "tenant-a", address: "C0:11:22:33:44:55").count == 1)
            #expect(try await server.store.firmwareUpdates(tenant: "tenant-a", address: "C0:11:22:33:44:56").isEmpty)
            #expect(try await server.store.firmwareUpdates(tenant: "tenant-b", address: nil).isEmpty, "another tenant sees none")
            let statistics = try await server.store.statistics(tenant: "tenant-a")
            #expect(statistics.devices == 1, "the update's unknown device is created, discovered")
        }
    }

    @Test("an update of a device with no serial (a health device) is kept without making a device", arguments: ServerBackend.allCases)
    func withoutSerial(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let failed = Commands.firmwareUpdate(serial: nil, outcome: .failed)
            #expect(try await api.push([failed]).decode(PushResponse.self).results.map(\.status) == [.applied])
            #expect(try await server.store.firmwareUpdates(tenant: "tenant-a", address: nil).map(\.document.outcome) == [.failed])
            #expect(try await server.store.statistics(tenant: "tenant-a").devices == 0)
        }
    }

    @Test("update and delete are rejected; a document that breaks the rules is rejected with the reason", arguments: ServerBackend.allCases)
    func refusals(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let recorded = Commands.firmwareUpdate()
            _ = try await api.push([recorded])
            let update = Commands.firmwareUpdate(uid: recorded.entityID, operation: .update)
            let delete = PushCommand(id: UUID(), entityType: .firmwareUpdate, entityID: recorded.entityID, operation: .delete, payload: .identityOnly)
            var mismatched = Commands.firmwareUpdate()
            mismatched.entityID = UUID().uuidString.lowercased()
            var badHash = Commands.firmwareUpdate()
            if case .firmwareUpdate(var document) = badHash.payload {
                document.imageHash = String(repeating: "AB", count: 32)
                badHash.payload = .firmwareUpdate(document)
            }
            let notUUID = PushCommand(id: UUID(), entityType: .firmwareUpdate, entityID: "TH-1", operation: .create, payload: recorded.payload)
            let results = try await api.push([update, delete, mismatched, badHash, notUUID]).decode(PushResponse.self).results
            #expect(results.map(\.status) == [.rejected, .rejected, .rejected, .rejected, .rejected])
            #expect(results[0].reason?.contains("written once") == true)
            #expect(results[2].reason?.contains("does not match entity_id") == true)
            #expect(results[3].reason?.contains("imageHash") == true)
            #expect(results[4].reason?.contains("not a valid firmwareUpdate identity") == true)
            #expect(try await server.store.firmwareUpdates(tenant: "tenant-a", address: nil).count == 1)
        }
    }
}
