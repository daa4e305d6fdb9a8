import Testing
@testable import LinkProtocol
import TetherPrimitives

/// Drives one `LinkSession` by hand: builds device frames with correct sequence numbers, decodes the gateway's
/// writes back into messages, and keeps every other action for assertions.
struct SessionHarness {
    var session: LinkSession
    var now = t0
    var version: UInt8 = 1
    /// The device's next reliable sequence number (§5.1).
    var deviceSequence: UInt16 = 0
    var sent: [(header: FrameHeader, message: LinkMessage?)] = []
    var persists: [PersistBatch] = []
    var timers: [LinkTimer: Timestamp] = [:]
    var reports: [LinkReport] = []
    var disconnects: [DisconnectReason] = []
    var writes: [[UInt8]] = []
    /// The gateway's writes reassembled, across values as the device would (one link).
    var gatewayFrames = FrameDecoder()

    static let info = DeviceInfo(hardwareRevision: 3, firmware: FirmwareVersion(major: 1, minor: 4, patch: 2), bootCounter: 7, capabilities: [.battery], versions: 1...2, serial: "TT-HARNESS")

    init(configuration: LinkSessionConfiguration = LinkSessionConfiguration(), history: DeviceHistory = DeviceHistory()) {
        session = LinkSession(configuration: configuration, history: history)
    }

    mutating func advance(milliseconds: Int64) { now = now.plus(milliseconds: milliseconds) }

    /// Applies actions and returns them, recording writes as decoded messages.
    @discardableResult
    mutating func record(_ actions: [LinkAction]) -> [LinkAction] {
        for action in actions {
            switch action {
            case .write(let bytes):
                writes.append(bytes)
                // The gateway's writes are valid frames, cut into ATT values (§3.1): bytes that do not decode
                // fail the test that caused them instead of ending this loop early and hiding what followed.
                gatewayFrames.append(bytes)
                while true {
                    do {
                        guard let frame = try gatewayFrames.decode() else { break }
                        do {
                            sent.append((frame.header, try LinkMessage(frame: frame)))
                        } catch {
                            Issue.record("the session wrote a frame whose message does not decode: \(error)")
                            sent.append((frame.header, nil))
                        }
                    } catch {
                        Issue.record("the session wrote bytes that are not a frame: \(error)")
                    }
                }

            case .persist(let batch): persists.append(batch)
            case .armTimer(let timer, let at): timers[timer] = at
            case .cancelTimer(let timer): timers[timer] = nil
            case .disconnect(let reason): disconnects.append(reason)
            case .report(let report): reports.append(report)
            }
        }
        return actions
    }

    /// A device frame: reliable types take the next sequence number, unreliable ones carry it (§5.1).
    mutating func frame(_ message: LinkMessage, version: UInt8? = nil, flags: FrameFlags = []) -> [UInt8] {
        let sequence = SequenceNumber(deviceSequence)
        if MessageType.consumesDeviceSequence(typeCode: message.type.rawValue) { deviceSequence &+= 1 }
        return message.frame(version: version ?? self.version, sequence: sequence, flags: flags)
    }

    @discardableResult
    mutating func connect(mtu: Int = 247) -> [LinkAction] {
        deviceSequence = 0
        gatewayFrames = FrameDecoder()
        return record(session.connected(mtu: mtu, at: now))
    }

    @discardableResult
    mutating func receive(_ bytes: [UInt8]) -> [LinkAction] { record(session.received(bytes, at: now)) }

    @discardableResult
    mutating func receive(_ message: LinkMessage, version: UInt8? = nil) -> [LinkAction] {
        let bytes = frame(message, version: version)
        return receive(bytes)
    }

    @discardableResult
    mutating func persistAll() -> [LinkAction] {
        let batches = persists
        persists = []
        var actions: [LinkAction] = []
        for batch in batches { actions += record(session.persisted(batch.id, at: now)) }
        return actions
    }

    @discardableResult
    mutating func fire(_ timer: LinkTimer) -> [LinkAction] {
        timers[timer] = nil
        return record(session.timerFired(timer, at: now))
    }

    /// Connect, answer HELLO with DEVICE_INFO, store it. Leaves the session established.
    mutating func handshake(version: UInt8 = 1, info: DeviceInfo = SessionHarness.info) {
        self.version = version
        connect()
        receive(.deviceInfo(info))
        persistAll()
    }

    var sentMessages: [LinkMessage] { sent.compactMap(\.message) }
    var lastAck: Ack? { sentMessages.reversed().lazy.compactMap { if case .ack(let ack) = $0 { ack } else { nil } }.first }
    var nacks: [Nack] { sentMessages.compactMap { if case .nack(let nack) = $0 { nack } else { nil } } }
    func lastSent(_ type: MessageType) -> (header: FrameHeader, message: LinkMessage?)? { sent.last { $0.header.type == type.rawValue } }
    var storedHits: [StoredHit] { [] }
}

func hit(_ sequence: UInt32, boot: UInt16 = 7, ticks: UInt32 = 1000) -> LinkMessage {
    .hitEvent(HitEvent(eventSequence: sequence, bootCounter: boot, ticks: ticks, durationMilliseconds: 1200, intensity: 50))
}

extension PersistBatch {
    var hits: [StoredHit] { items.compactMap { if case .hit(let hit) = $0 { hit } else { nil } } }
}
