import Foundation
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

@Suite("authentication and tenant isolation")
struct AccessTests {
    @Test("missing, malformed, wrong and revoked tokens all get the same 401 problem", arguments: ServerBackend.allCases)
    func unauthorized(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let good = try await server.token(tenant: "tenant-a", gateway: "gw-1")
            let wrongSecret = String(good.dropLast(4)) + "AAAA"
            let revoked = try await TokenAdministration.issue(store: server.store, tenant: "tenant-a", gateway: "gw-old")
            #expect(try await server.store.revokeToken(id: revoked.id, at: Date()))
            for token in [nil, "nonsense", "tether_0000000000000000_" + String(repeating: "A", count: 43), wrongSecret, revoked.reveal] {
                let answer = try await API(baseURL: server.baseURL, token: token).changes()
                #expect(answer.status == 401)
                #expect(answer.headers.first(name: "Content-Type") == SyncAPI.problemMediaType)
                #expect(answer.problem?.problemType == .unauthorized)
                #expect(answer.headers.first(name: "WWW-Authenticate")?.hasPrefix("Bearer realm=\"tether\"") == true)
            }
            #expect(try await API(baseURL: server.baseURL, token: good).changes().status == 200)
        }
    }

    @Test("tokens are stored as SHA-256 of the secret only")
    func storedHashed() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteServerStore(path: directory + "/s.sqlite")
        try await store.migrate()
        let token = try await TokenAdministration.issue(store: store, tenant: "t", gateway: "g")
        let record = try #require(try await store.token(id: token.id))
        #expect(record.secretHash == token.secretHash)
        #expect(record.secretHash.count == 32)
        // `tether_<id>_<secret>`: the secret is base64url and may itself contain "_".
        let secret = String(token.reveal.split(separator: "_", maxSplits: 2).last!)
        #expect(secret.count == 43)
        let file = try Data(contentsOf: URL(fileURLWithPath: directory + "/s.sqlite")) + ((try? Data(contentsOf: URL(fileURLWithPath: directory + "/s.sqlite-wal"))) ?? Data())
        #expect(file.range(of: Data(secret.utf8)) == nil, "the secret itself is nowhere in the database")
        #expect(!"\(token)".contains(secret), "a token's description hides the secret")
        #expect(token.matches(storedHash: record.secretHash))
        var other = record.secretHash
        other[31] ^= 1
        #expect(!token.matches(storedHash: other))
        #expect(GatewayToken(presented: token.reveal)?.id == token.id)
        #expect(GatewayToken(presented: token.reveal + "x") == nil)
    }

    @Test("a gateway reads and writes only its tenant's devices", arguments: ServerBackend.allCases)
    func tenantIsolation(backend: ServerBackend) async throws {
        try await withServer(backend) { server in
            let a = try await server.api(tenant: "tenant-a", gateway: "gw-1")
            let b = try await server.api(tenant: "tenant-b", gateway: "gw-1")
            let shared = Commands.event("TH-1", sequence: 1)
            #expect(try await a.push([shared, Commands.device("TH-1")]).decode(PushResponse.self).results.map(\.status) == [.applied, .applied])
            // The same idempotency key in another tenant is another command.
            #expect(try await b.push([shared]).decode(PushResponse.self).results.map(\.status) == [.applied])
            let aPeer = try await server.api(tenant: "tenant-a", gateway: "gw-2")
            let seenByA = try await aPeer.changes().decode(ChangePage.self).changes
            #expect(seenByA.map(\.serial) == ["TH-1", "TH-1"], "the event's placeholder, then the device update")
            #expect(seenByA.last?.device?.pairingState == .paired)
            let bPeer = try await server.api(tenant: "tenant-b", gateway: "gw-2")
            let seenByB = try await bPeer.changes().decode(ChangePage.self).changes
            #expect(seenByB.count == 1)
            #expect(seenByB.first?.device?.pairingState == .discovered, "tenant B's TH-1 is its own placeholder, not tenant A's paired device")
            #expect(try await b.send(.GET, SyncAPI.settingsPath(serial: "TH-2")).status == 404)
            _ = try await a.push([Commands.device("TH-2")])
            #expect(try await a.send(.GET, SyncAPI.settingsPath(serial: "TH-2")).status == 200)
            #expect(try await b.send(.GET, SyncAPI.settingsPath(serial: "TH-2")).status == 404, "tenant A's device does not exist for tenant B")
            #expect(try await server.store.statistics(tenant: "tenant-a").events == 1)
            #expect(try await server.store.statistics(tenant: "tenant-b").events == 1)
        }
    }
}
