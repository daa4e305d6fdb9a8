import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

/// Fresh, empty storage on `backend`. Without PostgreSQL: a loud skip (a warning issue and a cancelled test), or,
/// when `TETHER_REQUIRE_POSTGRES=1`, a recorded failure and `nil` (the caller returns).
func freshStorage(_ backend: ServerBackend, in directory: String) async throws -> ServerStorage? {
    do {
        return try await backend.freshStorage(in: directory)
    } catch let error as PostgresCluster.Unavailable {
        // Only "not installed" may skip; a PostgreSQL that would not start (PostgresCluster.StartFailed) is thrown
        // on and fails the test.
        if ServerBackend.postgresRequired {
            Issue.record("PostgreSQL is required (TETHER_REQUIRE_POSTGRES=1) but not installed: \(error)")
            return nil
        }
        print("⚠️  WARNING: PostgreSQL unavailable, skipping the PostgreSQL run of this test: \(error)")
        Issue.record("SKIPPED: PostgreSQL unavailable: \(error)", severity: .warning)
        try Test.cancel("PostgreSQL unavailable: \(error)")
    }
}

/// Runs `body` against a fresh server on `backend`. Without PostgreSQL the test is skipped loudly (a warning
/// issue and a cancelled test), or fails when `TETHER_REQUIRE_POSTGRES=1`.
func withServer(
    _ backend: ServerBackend, configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestServer) async throws -> Void
) async throws {
    let directory = try makeTemporaryDirectory("tether-server-test")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    guard let storage = try await freshStorage(backend, in: directory) else { return }
    let server = try await TestServer.start(storage: storage, configure: configure)
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// A minimal HTTP client for poking the API byte for byte.
struct API: Sendable {
    let baseURL: String
    let token: String?

    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: body) }
        var problem: Problem? { try? decode(Problem.self) }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func send(_ method: HTTPMethod, _ path: String, json: Data? = nil, contentType: String = "application/json", headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 * 1024 * 1024)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Data(body.readableBytesView))
    }

    func push(_ commands: [PushCommand]) async throws -> Answer {
        try await send(.POST, SyncAPI.pushPath, json: try JSONEncoder().encode(PushRequest(commands: commands)))
    }

    func changes(after cursor: String? = nil, limit: Int? = nil) async throws -> Answer {
        var query: [String] = []
        if let cursor { query.append("after=\(cursor)") }
        if let limit { query.append("limit=\(limit)") }
        return try await send(.GET, SyncAPI.changesPath + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
    }
}

extension TestServer {
    func api(tenant: String = "tenant-a", gateway: String = "gw-1") async throws -> API {
        API(baseURL: baseURL, token: try await token(tenant: tenant, gateway: gateway))
    }
}

/// Commands as a gateway would push them.
enum Commands {
    static func event(_ serial: String, boot: Int = 1, sequence: Int64, intensity: Int = 40, id: UUID = UUID(), operation: CommandOperation = .create) -> PushCommand {
        let document = EventPayload(
            serial: serial, bootCounter: boot, sequence: sequence, ticks: 1000 * (sequence + 1), utcNanoseconds: nil, uncertaintyNanoseconds: nil,
            durationMilliseconds: 800, intensity: intensity, receivedAt: 1_793_520_000_000_000_000 + sequence)
        return PushCommand(id: id, entityType: .consumptionEvent, entityID: "\(serial)/\(boot)/\(sequence)", operation: operation, payload: .consumptionEvent(document))
    }

    static func device(_ serial: String, pairing: PairingState = .paired, firmware: String? = "1.4.2", id: UUID = UUID()) -> PushCommand {
        PushCommand(
            id: id, entityType: .device, entityID: serial, operation: .update,
            payload: .device(DevicePayload(serial: serial, hardwareRevision: firmware == nil ? nil : 3, firmwareVersion: firmware, protocolVersion: firmware == nil ? nil : 1, capabilities: firmware == nil ? 0 : 3, pairingState: pairing)))
    }

    static func firmwareUpdate(
        uid: String = UUID().uuidString.lowercased(), serial: String? = "TH-1", outcome: FirmwareUpdateOutcome = .confirmed, version: String = "1.5.0+0",
        operation: CommandOperation = .create, id: UUID = UUID()
    ) -> PushCommand {
        let document = FirmwareUpdatePayload(
            uid: uid, address: "C0:11:22:33:44:55", serial: serial, peripheralUid: nil, imageVersion: version,
            imageHash: String(repeating: "ab", count: 32), imageBytes: 25_232, outcome: outcome, message: outcome == .reverted ? "came back on 1.4.2" : nil,
            attempts: 1, startedAt: 1_793_520_000_000_000_000, finishedAt: 1_793_520_090_000_000_000)
        return PushCommand(id: id, entityType: .firmwareUpdate, entityID: uid, operation: operation, payload: .firmwareUpdate(document))
    }

    static func settings(_ serial: String, desired: SettingsDocument?, by author: SettingsChangeAuthor?, reported: SettingsDocument? = nil, base: Int64?, id: UUID = UUID()) -> PushCommand {
        PushCommand(
            id: id, entityType: .deviceSettings, entityID: serial, operation: .update,
            payload: .deviceSettings(SettingsPayload(serial: serial, desiredVersion: desired == nil ? nil : 2, desired: desired, desiredChangedBy: author, reportedVersion: 1, reported: reported)),
            baseVersion: base)
    }
}
