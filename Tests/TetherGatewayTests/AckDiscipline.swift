import LinkProtocol
import TetherGateway

/// Replays a trace of one device and checks link protocol §8.2 at every ACK the gateway wrote: every HIT_EVENT it
/// acknowledges (by boot and event sequence) was durably committed before that write. Retransmissions and
/// duplicated notifications carry the same event, so they are acknowledged by the first commit of it.
struct AckDiscipline {
    struct Violation: Error, CustomStringConvertible {
        let event: String
        var description: String { "an ACK covered hit \(event) before any commit stored it" }
    }

    struct Hit: Hashable {
        let boot: UInt16
        let sequence: Int64
    }

    /// Returns (ACK frames checked, distinct hits they acknowledged).
    @discardableResult
    static func check(_ trace: [GatewayTrace], address: String) throws -> (acks: Int, acknowledged: Int) {
        var deviceFrames = FrameDecoder()
        var gatewayFrames = FrameDecoder()
        // Hit frames of the current link by frame sequence; reset when the device says DEVICE_INFO (a new link).
        var hitsBySequence: [(SequenceNumber, Hit)] = []
        var committed = Set<Hit>()
        var acknowledged = Set<Hit>()
        var acks = 0
        for event in trace {
            switch event {
            case .received(let from, let bytes) where from == address:
                _ = deviceFrames.append(bytes)
                while let frame = try? deviceFrames.decode() {
                    switch try? LinkMessage(frame: frame) {
                    case .hitEvent(let hit)?:
                        hitsBySequence.append(
                            (frame.header.sequence, Hit(boot: hit.bootCounter, sequence: Int64(hit.eventSequence))))
                    case .deviceInfo?:
                        hitsBySequence.removeAll()
                        gatewayFrames = FrameDecoder()
                    default:
                        continue
                    }
                }
            case .committed(let at, _, let stored) where at == address:
                for key in stored { committed.insert(Hit(boot: key.bootCounter, sequence: key.sequence)) }
            case .wrote(let to, let bytes) where to == address:
                _ = gatewayFrames.append(bytes)
                while let frame = try? gatewayFrames.decode() {
                    guard case .ack(let ack) = try? LinkMessage(frame: frame) else { continue }
                    acks += 1
                    // Sequence numbers wrap: only the latest window of hit frames can be meant.
                    for (sequence, hit) in hitsBySequence.suffix(64) where ack.covers(sequence) {
                        guard committed.contains(hit) else { throw Violation(event: "\(hit)") }
                        acknowledged.insert(hit)
                    }
                }
            default:
                continue
            }
        }
        return (acks, acknowledged.count)
    }
}
