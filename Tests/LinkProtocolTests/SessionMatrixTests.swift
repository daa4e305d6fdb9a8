import Testing
@testable import LinkProtocol
import TetherSettings

/// Every phase of §11 against every kind of input: the session never crashes, never ACKs what it has not
/// stored, never talks when it has no link, and keeps its phase rules.
@Suite("Session phase × input matrix (§11)")
struct SessionMatrixTests {
    enum Phase: CaseIterable, Sendable { case idle, hello, established, closing }

    enum Input: CaseIterable, Sendable {
        case connected, deviceInfo, hit, garbage, partialFrame, timeSyncResponse, nack, persisted, persistFailed
        case requestTimer, timeSyncTimer, stallTimer, disconnected, desiredConfig
    }

    static func harness(in phase: Phase) -> SessionHarness {
        var harness = SessionHarness()
        switch phase {
        case .idle: break
        case .hello: harness.connect()
        case .established: harness.handshake(); harness.receive(hit(0))  // one store in flight
        case .closing:
            harness.connect()
            for _ in 0..<3 { harness.fire(.request) }
        }
        harness.sent = []
        harness.reports = []
        return harness
    }

    @Test("each phase handles each input", arguments: Phase.allCases, Input.allCases)
    func cell(phase: Phase, input: Input) {
        var harness = Self.harness(in: phase)
        let pending = harness.persists
        harness.persists = []
        let actions: [LinkAction]
        switch input {
        case .connected: actions = harness.connect()
        case .deviceInfo: actions = harness.receive(.deviceInfo(SessionHarness.info))
        case .hit: harness.deviceSequence = max(harness.deviceSequence, 1); actions = harness.receive(hit(5))
        case .garbage: actions = harness.receive([0x00, 0x54, 0x01, 0x10, 0x00, 0x01, 0x00, 0x0B] + Array(repeating: 0xFF, count: 13))
        case .partialFrame: actions = harness.receive([0x54, 0x01, 0x10])
        case .timeSyncResponse: actions = harness.receive(.timeSyncResponse(TimeSyncResponse(requestSequence: SequenceNumber(1), bootCounter: 7, receiveTicks: 10, transmitTicks: 10)))
        case .nack: actions = harness.receive(.nack(Nack(sequence: SequenceNumber(2), reason: .busy)))
        case .persisted: actions = pending.flatMap { harness.record(harness.session.persisted($0.id, at: harness.now)) } + harness.record(harness.session.persisted(999, at: harness.now))
        case .persistFailed: actions = pending.flatMap { harness.record(harness.session.persistFailed($0.id, reason: .storageFull, at: harness.now)) }
        case .requestTimer: actions = harness.fire(.request)
        case .timeSyncTimer: actions = harness.fire(.timeSync)
        case .stallTimer: actions = harness.fire(.stall)
        case .disconnected: actions = harness.record(harness.session.disconnected(at: harness.now))
        case .desiredConfig: actions = harness.record(harness.session.desiredConfigChanged(DeviceConfig(version: 3, settings: DeviceSettings(sensitivity: 4)), at: harness.now))
        }

        let wrote = actions.contains { if case .write = $0 { true } else { false } }
        switch (phase, input) {
        case (.idle, .connected), (.closing, .connected):
            #expect(harness.session.phase == .hello)
            #expect(harness.sentMessages.first?.type == .hello)
        case (.idle, _), (.closing, _):
            // No link (or one being torn down): nothing may be written and nothing stored.
            #expect(!wrote, "\(phase) × \(input) wrote")
            #expect(harness.persists.isEmpty, "\(phase) × \(input) stored")
            if input == .disconnected { #expect(harness.session.phase == .idle) }
        case (.hello, .deviceInfo):
            #expect(harness.session.phase == .established(version: 1))
        case (.hello, .hit):
            #expect(harness.nacks.map(\.reason) == [.busy])
        case (.established, .persisted):
            #expect(harness.lastAck == Ack(through: SequenceNumber(1)))
        case (.established, .persistFailed):
            #expect(harness.nacks.map(\.reason) == [.storageFull])
        case (_, .disconnected):
            #expect(harness.session.phase == .idle)
            #expect(actions.contains(.cancelTimer(.timeSync)) || phase != .established)
        case (_, .connected):
            #expect(harness.session.phase == .hello, "a new link replaces the old one")
        default:
            break
        }
        // Whatever the cell: an ACK never covers a frame whose store has not completed.
        if case .established = phase, input != .persisted {
            #expect(harness.lastAck.map { !$0.covers(SequenceNumber(1)) } ?? true, "\(phase) × \(input) ACKed an unstored frame")
        }
    }
}
