import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

@Suite("request limits and malformed requests: clear problems, nothing written")
struct LimitTests {
    @Test("too many commands: 400 batch-too-long with max_commands")
    func batchTooLong() async throws {
        try await withServer(.sqlite, configure: { $0.limits.maximumCommandsPerPush = 10 }) { server in
            let api = try await server.api()
            let answer = try await api.push((0..<11).map { Commands.event("TH-1", sequence: Int64($0)) })
            #expect(answer.status == 400)
            #expect(answer.problem?.problemType == .batchTooLong)
            #expect(answer.problem?.maxCommands == 10)
            #expect(try await api.push((0..<10).map { Commands.event("TH-1", sequence: Int64($0)) }).status == 200)
        }
    }

    @Test("a body over the limit: 413 request-too-large with max_bytes, by declared length and by bytes sent")
    func tooLarge() async throws {
        try await withServer(.sqlite, configure: { $0.limits.maximumRequestBytes = 4096 }) { server in
            let api = try await server.api()
            let answer = try await api.push((0..<100).map { Commands.event("TH-1", sequence: Int64($0)) })
            #expect(answer.status == 413)
            #expect(answer.problem?.problemType == .requestTooLarge)
            #expect(answer.problem?.maxBytes == 4096)
            #expect(try await server.store.statistics(tenant: "tenant-a").events == 0)
        }
    }

    @Test("malformed JSON, a schema violation and a wrong media type are refused whole")
    func malformed() async throws {
        try await withServer(.sqlite) { server in
            let api = try await server.api()
            let broken = try await api.send(.POST, SyncAPI.pushPath, json: Data("{\"commands\": [".utf8))
            #expect(broken.status == 400)
            #expect(broken.problem?.problemType == .malformedRequest)
            let missing = try await api.send(.POST, SyncAPI.pushPath, json: Data(#"{"commands":[{"id":"not-a-uuid"}]}"#.utf8))
            #expect(missing.status == 400)
            #expect(missing.problem?.detail?.contains("commands[0]") == true)
            let text = try await api.send(.POST, SyncAPI.pushPath, json: Data("{}".utf8), contentType: "text/plain")
            #expect(text.status == 415)
            #expect(text.problem?.problemType == .unsupportedMediaType)
            let wrongShape = Data(#"{"commands":[{"id":"01890a5d-ac96-774b-bcce-b302099a8057","entity_type":"device","entity_id":"TH-1","operation":"update","payload":{"serial":"TH-1"}}]}"#.utf8)
            let results = try await api.send(.POST, SyncAPI.pushPath, json: wrongShape).decode(PushResponse.self).results
            #expect(results.map(\.status) == [.rejected], "a payload of the wrong shape rejects its command, not the request")
            #expect(results[0].reason?.contains("capabilities") == true)
        }
    }

    @Test("unknown paths are 404 and wrong methods 405 with Allow, as problems")
    func routing() async throws {
        try await withServer(.sqlite) { server in
            let api = try await server.api()
            let missing = try await api.send(.GET, "/v1/nothing")
            #expect(missing.status == 404)
            #expect(missing.problem?.problemType == .notFound)
            let method = try await api.send(.DELETE, SyncAPI.pushPath)
            #expect(method.status == 405)
            #expect(method.headers.first(name: "Allow") == "POST")
            #expect(method.problem?.problemType == .methodNotAllowed)
        }
    }
}
