import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

@Suite("push: one transaction per batch, one result per command, exactly once")
struct PushTests {
    @Test("each command gets its own result: applied, duplicate, conflict, rejected", arguments: ServerBackend.allCases)
    func resultsPerCommand(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let first = Commands.event("TH-1", sequence: 1)
            var mismatched = Commands.event("TH-1", sequence: 2)
            mismatched.entityID = "TH-1/1/3"
            let answer = try await api.push([first, Commands.event("TH-1", sequence: 1, intensity: 99), mismatched, first])
            #expect(answer.status == 200)
            let results = try answer.decode(PushResponse.self).results
            #expect(results.map(\.status) == [.applied, .conflict, .rejected, .duplicate])
            #expect(results.map(\.id) == [first.id, results[1].id, mismatched.id, first.id])
            #expect(results[1].conflict?.serverVersion == 1)
            let serverValue = try #require(results[1].conflict?.serverValue).decode(EventPayload.self)
            #expect(serverValue.intensity == 40)
            #expect(results[2].reason?.contains("does not match entity_id") == true)
            let statistics = try await server.store.statistics(tenant: "tenant-a")
            #expect(statistics.events == 1)
            #expect(statistics.appliedCommands == 1)
            #expect(statistics.devices == 1, "an event for an unknown device creates the device")
        }
    }

    @Test("a batch sent again is all duplicates and writes nothing; a reused id with other content is rejected", arguments: ServerBackend.allCases)
    func exactlyOnce(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let batch = (0..<50).map { Commands.event("TH-\($0 % 3)", sequence: Int64($0)) }
            let once = try await api.push(batch).decode(PushResponse.self).results
            #expect(once.count == 50)
            #expect(once.allSatisfy { $0.status == .applied })
            let again = try await api.push(batch).decode(PushResponse.self).results
            #expect(again.allSatisfy { $0.status == .duplicate })
            #expect(again.map(\.version) == once.map(\.version))
            var reused = Commands.event("TH-0", sequence: 999)
            reused.id = batch[0].id
            let refused = try await api.push([reused]).decode(PushResponse.self).results
            #expect(refused.map(\.status) == [.rejected])
            #expect(refused[0].reason?.contains("already used for a different command") == true)
            let statistics = try await server.store.statistics(tenant: "tenant-a")
            #expect(statistics.events == 50)
            #expect(statistics.appliedCommands == 50)
        }
    }

    @Test("the same batch pushed by 8 concurrent requests is applied once", arguments: ServerBackend.allCases)
    func concurrentRetries(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let batch = (0..<200).map { Commands.event("TH-\($0 % 5)", sequence: Int64($0)) }
            let answers = try await withThrowingTaskGroup(of: [CommandResult].self) { group in
                for _ in 0..<8 { group.addTask { try await api.push(batch).decode(PushResponse.self).results } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for index in batch.indices {
                let statuses = answers.map { $0[index].status }
                #expect(statuses.filter { $0 == .applied }.count == 1, "command \(index): \(statuses)")
                #expect(statuses.filter { $0 == .duplicate }.count == 7)
            }
            let statistics = try await server.store.statistics(tenant: "tenant-a")
            #expect(statistics.events == 200)
            #expect(statistics.appliedCommands == 200)
        }
    }

    @Test("a settings change on a stale base conflicts with the server's version and value", arguments: ServerBackend.allCases)
    func settingsConflict(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            _ = try await api.push([Commands.device("TH-1")])
            guard case .updated(let resource) = try await server.store.replaceDesiredSettings(
                tenant: "tenant-a", serial: "TH-1", desired: SettingsDocument(sensitivity: 7), author: .backend, origin: nil, ifMatch: nil)
            else { Issue.record("no device"); return }
            #expect(resource.version == 1)
            let stale = Commands.settings("TH-1", desired: SettingsDocument(sensitivity: 3), by: .technician, base: 0)
            let results = try await api.push([stale]).decode(PushResponse.self).results
            #expect(results[0].status == .conflict)
            #expect(results[0].conflict?.serverVersion == 1)
            #expect(try results[0].conflict?.serverValue.decode(SettingsDocument.self) == SettingsDocument(sensitivity: 7))
            let current = Commands.settings("TH-1", desired: SettingsDocument(sensitivity: 3), by: .technician, base: 1)
            let accepted = try await api.push([current]).decode(PushResponse.self).results
            #expect(accepted[0].status == .applied)
            #expect(accepted[0].version == 2)
            let echo = Commands.settings("TH-1", desired: SettingsDocument(sensitivity: 9), by: .backend, reported: SettingsDocument(sensitivity: 3), base: 0)
            let reported = try await api.push([echo]).decode(PushResponse.self).results
            #expect(reported[0].status == .applied, "a backend-authored echo never conflicts: it only reports")
            let settings = try #require(try await server.store.settings(tenant: "tenant-a", serial: "TH-1"))
            #expect(settings.desired == SettingsDocument(sensitivity: 3))
            #expect(settings.reported == SettingsDocument(sensitivity: 3))
            #expect(settings.version == 2)
        }
    }

    @Test("a gateway's placeholder never erases what the server knows of a device, nor undoes a pairing decision", arguments: ServerBackend.allCases)
    func deviceMerge(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            _ = try await api.push([Commands.device("TH-1", pairing: .paired)])
            let placeholder = Commands.device("TH-1", pairing: .discovered, firmware: nil)
            #expect(try await api.push([placeholder]).decode(PushResponse.self).results[0].status == .applied)
            let other = try await server.api(gateway: "gw-2")
            let page = try await other.changes().decode(ChangePage.self)
            let devices = page.changes.filter { $0.kind == .device }
            #expect(devices.count == 1, "the placeholder changed nothing, so it made no change entry")
            #expect(devices.last?.device?.firmwareVersion == "1.4.2")
            #expect(devices.last?.device?.pairingState == .paired)
        }
    }

    @Test("settings of a device deleted from the registry are rejected for good", arguments: ServerBackend.allCases)
    func settingsOfDeletedDevice(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            _ = try await api.push([Commands.device("TH-1")])
            #expect(try await server.store.deleteDevice(tenant: "tenant-a", serial: "TH-1") == 2)
            let results = try await api.push([Commands.settings("TH-1", desired: nil, by: nil, reported: SettingsDocument(sensitivity: 2), base: nil)])
                .decode(PushResponse.self).results
            #expect(results[0].status == .rejected)
            #expect(results[0].reason?.contains("deleted") == true)
        }
    }
}
