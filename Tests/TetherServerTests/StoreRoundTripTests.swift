import Foundation
import Logging
import SyncContract
import Testing
import TetherServer
import TetherSyncTesting

/// What a store writes, it reads back field for field, on both backends: the tables' column mappings
/// (ServerTables) are shared, so a value written to the wrong column would otherwise only show as a wrong answer
/// much later. The planner compares a stored event or telemetry row with a new command's document, so the same
/// content under a new command id must come back `duplicate`, not `conflict`.
@Suite("store round trips: every column comes back as written")
struct StoreRoundTripTests {
    @Test("tokens, events, telemetry and the command log read back what was written", arguments: ServerBackend.allCases)
    func roundTrip(_ backend: ServerBackend) async throws {
        let directory = try makeTemporaryDirectory("tether-roundtrip")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let storage = try await freshStorage(backend, in: directory) else { return }
        try await StoreAccess.with(storage, logger: Logger(label: "round-trip")) { store in
            // Whole seconds: both backends keep those exactly (SQLite as REAL seconds, PostgreSQL in microseconds).
            let token = TokenRecord(
                id: "0123456789abcdef", secretHash: Array(0..<32), tenant: "tenant-a", gateway: "gw-1",
                createdAt: Date(timeIntervalSince1970: 1_793_520_000), revokedAt: nil)
            try await store.insertToken(token)
            #expect(try await store.token(id: token.id) == token)
            #expect(try await store.revokeToken(id: token.id, at: Date(timeIntervalSince1970: 1_793_520_060)))
            var revoked = token
            revoked.revokedAt = Date(timeIntervalSince1970: 1_793_520_060)
            #expect(try await store.tokens() == [revoked])

            let principal = GatewayPrincipal(tenant: "tenant-a", gateway: "gw-1", tokenID: token.id)
            // Every field distinct from every other, so that two swapped columns cannot compare equal.
            let event = EventPayload(
                serial: "SN-1", bootCounter: 7, sequence: 42, ticks: 123_456, utcNanoseconds: 1_793_520_000_123_456_789,
                uncertaintyNanoseconds: 5_000_001, durationMilliseconds: 801, intensity: 41, receivedAt: 1_793_520_001_000_000_000)
            let telemetry = TelemetryPayload(
                serial: "SN-1", kind: .battery, receivedAt: 1_793_520_002_000_000_000, millivolts: 3_712, percent: 77, charging: false)
            func eventCommand(_ id: UUID) -> PushCommand {
                PushCommand(id: id, entityType: .consumptionEvent, entityID: "SN-1/7/42", operation: .create, payload: .consumptionEvent(event))
            }
            func telemetryCommand(_ id: UUID) -> PushCommand {
                PushCommand(
                    id: id, entityType: .deviceTelemetry, entityID: "SN-1/battery/1793520002000000000", operation: .create,
                    payload: .deviceTelemetry(telemetry))
            }
            let first = [eventCommand(UUID()), telemetryCommand(UUID())]
            #expect(try await store.push(first, by: principal).map(\.status) == [.applied, .applied])
            // New ids, same content: the stored rows are read back and compared with the documents.
            let again = try await store.push([eventCommand(UUID()), telemetryCommand(UUID())], by: principal)
            #expect(again.map(\.status) == [.duplicate, .duplicate], "\(again)")
            // The same ids again: answered from the command log with the versions it recorded.
            let repeated = try await store.push(first, by: principal)
            #expect(repeated.map(\.status) == [.duplicate, .duplicate])
            #expect(repeated.map(\.version) == [1, 1])

            let statistics = try await store.statistics(tenant: "tenant-a")
            #expect(statistics.events == 1 && statistics.telemetry == 1 && statistics.devices == 1)
            // Both first ids and both later ones: a duplicate under a new id is logged too.
            #expect(statistics.appliedCommands == 4)
        }
    }
}
