import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

@Suite("the change feed: pages, cursors, counts and checksums")
struct FeedTests {
    @Test("pages cover the feed in order, with has_more, count, checksum, and cursors that only move forward", arguments: ServerBackend.allCases)
    func paging(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let writer = try await server.api(gateway: "gw-writer")
            _ = try await writer.push((0..<25).map { Commands.device(String(format: "TH-%02d", $0)) })
            for serial in ["TH-03", "TH-07"] {
                _ = try await server.store.replaceDesiredSettings(
                    tenant: "tenant-a", serial: serial, desired: SettingsDocument(sensitivity: 5, sleepTimeoutSeconds: 300), author: .backend, origin: nil, ifMatch: nil)
            }
            _ = try await server.store.deleteDevice(tenant: "tenant-a", serial: "TH-11")
            let reader = try await server.api(gateway: "gw-reader")
            var cursor: String?
            var seen: [Change] = []
            var previous = SyncCursor.start
            var pages = 0
            while true {
                let page = try await reader.changes(after: cursor, limit: 10).decode(ChangePage.self)
                pages += 1
                #expect(page.count == page.changes.count)
                #expect(page.checksum == PageChecksum.checksum(of: page.changes))
                let next = try #require(SyncCursor(token: page.nextCursor))
                #expect(next >= previous)
                previous = next
                seen += page.changes
                cursor = page.nextCursor
                if !page.hasMore { break }
            }
            #expect(pages == 3)
            #expect(seen.count == 28)
            #expect(seen.filter { $0.kind == .deviceSettings }.map(\.serial) == ["TH-03", "TH-07"])
            #expect(seen.last?.kind == .device)
            #expect(seen.last?.operation == .delete)
            let empty = try await reader.changes(after: cursor).decode(ChangePage.self)
            #expect(empty.changes.isEmpty)
            #expect(empty.nextCursor == cursor, "an empty page keeps the cursor")
            #expect(!empty.hasMore)
            #expect(empty.checksum == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        }
    }

    @Test("a gateway does not get its own changes back, but its cursor moves past them", arguments: ServerBackend.allCases)
    func ownChanges(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            _ = try await api.push([Commands.device("TH-1"), Commands.device("TH-2")])
            let page = try await api.changes().decode(ChangePage.self)
            #expect(page.changes.isEmpty)
            #expect(page.nextCursor == "c1.2" || SyncCursor(token: page.nextCursor)! > .start)
        }
    }

    @Test("bad cursors and limits are 400, a cursor past the feed is 409 cursor-ahead", arguments: ServerBackend.allCases)
    func badParameters(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            for cursor in ["", "12", "c1.-1", "c1.01", "c2.5", "c1.99999999999999999999"] {
                let answer = try await api.send(.GET, SyncAPI.changesPath + "?after=" + cursor)
                #expect(answer.status == 400, "cursor \(cursor)")
                #expect(answer.problem?.problemType == .invalidCursor)
            }
            for limit in ["0", "1001", "ten"] {
                let answer = try await api.send(.GET, SyncAPI.changesPath + "?limit=" + limit)
                #expect(answer.status == 400)
                #expect(answer.problem?.problemType == .invalidLimit)
            }
            let ahead = try await api.changes(after: "c1.5")
            #expect(ahead.status == 409)
            #expect(ahead.problem?.problemType == .cursorAhead)
        }
    }
}

@Suite("device settings with ETags")
struct SettingsResourceTests {
    @Test("GET with If-None-Match, PUT with If-Match: 304, 428, 412, 422 and 200", arguments: ServerBackend.allCases)
    func etags(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let api = try await server.api()
            let path = SyncAPI.settingsPath(serial: "TH/1")
            #expect(try await api.send(.GET, path).status == 404)
            _ = try await api.push([Commands.device("TH/1")])
            let first = try await api.send(.GET, path)
            #expect(first.status == 200)
            #expect(first.headers.first(name: "ETag") == "\"0\"")
            #expect(try first.decode(DeviceSettingsResource.self).version == 0)
            _ = try await server.store.replaceDesiredSettings(
                tenant: "tenant-a", serial: "TH/1", desired: SettingsDocument(ledBrightness: 30), author: .backend, origin: nil, ifMatch: nil)
            #expect(try await api.send(.GET, path, headers: [("If-None-Match", "\"0\"")]).status == 200)
            let unchanged = try await api.send(.GET, path, headers: [("If-None-Match", "\"1\"")])
            #expect(unchanged.status == 304)
            #expect(unchanged.headers.first(name: "ETag") == "\"1\"")
            #expect(unchanged.body.isEmpty)
            let body = try JSONEncoder().encode(DesiredSettingsUpdate(desired: SettingsDocument(sensitivity: 4)))
            let noPrecondition = try await api.send(.PUT, path, json: body)
            #expect(noPrecondition.status == 428)
            let stale = try await api.send(.PUT, path, json: body, headers: [("If-Match", "\"0\"")])
            #expect(stale.status == 412)
            #expect(stale.problem?.currentVersion == 1)
            #expect(stale.headers.first(name: "ETag") == "\"1\"")
            let invalid = try await api.send(
                .PUT, path, json: try JSONEncoder().encode(DesiredSettingsUpdate(desired: SettingsDocument(sensitivity: 11))), headers: [("If-Match", "\"1\"")])
            #expect(invalid.status == 422)
            #expect(invalid.problem?.problemType == .invalidSettings)
            let accepted = try await api.send(.PUT, path, json: body, headers: [("If-Match", "\"1\"")])
            #expect(accepted.status == 200)
            #expect(accepted.headers.first(name: "ETag") == "\"2\"")
            let resource = try accepted.decode(DeviceSettingsResource.self)
            #expect(resource.desired == SettingsDocument(sensitivity: 4))
            #expect(resource.changedBy == .technician)
            let peer = try await server.api(gateway: "gw-2")
            let changes = try await peer.changes().decode(ChangePage.self).changes.filter { $0.kind == .deviceSettings }
            #expect(changes.map(\.version) == [1, 2], "the other gateway sees both settings changes")
        }
    }
}
