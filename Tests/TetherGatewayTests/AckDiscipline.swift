import LinkProtocol
import TetherGateway

/// Replays a trace of one device and checks link protocol §8.2 at every ACK the gateway wrote: every HIT_EVENT it
/// acknowledges (by boot and event sequence) was durably committed before that write, and so was every CONFIG_DATA
/// (by its config: a frame sent again under the same number with other settings must not be covered by the first
/// one's commit). Retransmissions and duplicated notifications carry the same event, so they are acknowledged by
/// the first commit of it.
///
/// Bytes that do not decode are counted, not skipped silently: a corrupt frame must not end the check early, and
/// the caller asserts how many it expected (none, on a link without injected corruption).
struct AckDiscipline {
    struct Violation: Error, CustomStringConvertible {
        let frame: String
        var description: String { "an ACK covered \(frame) before any commit stored it" }
    }

    struct Hit: Hashable {
        let boot: UInt16
        let sequence: Int64
    }

    struct Checked {
        /// ACK frames the gateway wrote.
        var acks = 0
        /// Distinct hits they acknowledged.
        var acknowledged = 0
        /// Distinct CONFIG_DATA reports (by config) they acknowledged.
        var acknowledgedReports = 0
        /// Bytes from either side that were not a frame (FrameDecoder errors).
        var decodeErrors: [FrameError] = []
    }

    /// The distinct hits the device sent (received frames that decode; the rest are `check`'s business).
    static func hitsReceived(_ trace: [GatewayTrace], address: String) -> Set<Hit> {
        var decoder = FrameDecoder()
        var hits = Set<Hit>()
        for case .received(let from, let bytes) in trace where from == address {
            _ = decoder.append(bytes)
            while true {
                do {
                    guard let frame = try decoder.decode() else { break }
                    if case .hitEvent(let hit)? = try? LinkMessage(frame: frame) {
                        hits.insert(Hit(boot: hit.bootCounter, sequence: Int64(hit.eventSequence)))
                    }
                } catch {
                    continue  // bytes that are no frame: `check` counts them for its caller to assert
                }
            }
        }
        return hits
    }

    static func check(_ trace: [GatewayTrace], address: String) throws -> Checked {
        var deviceFrames = FrameDecoder()
        var gatewayFrames = FrameDecoder()
        // Reliable frames of the current link by frame sequence; reset when the device says DEVICE_INFO (a new link).
        var hitsBySequence: [(SequenceNumber, Hit)] = []
        var reportsBySequence: [(SequenceNumber, DeviceConfig)] = []
        var committed = Set<Hit>()
        var storedReports = Set<DeviceConfig>()
        var acknowledged = Set<Hit>()
        var acknowledgedReports = Set<DeviceConfig>()
        var result = Checked()

        /// Every frame in `decoder`, errors counted; decoding goes on after an error (the decoder resynchronises).
        func frames(_ decoder: inout FrameDecoder) -> [Frame] {
            var frames: [Frame] = []
            while true {
                do {
                    guard let frame = try decoder.decode() else { return frames }
                    frames.append(frame)
                } catch {
                    result.decodeErrors.append(error)
                }
            }
        }

        for event in trace {
            switch event {
            case .received(let from, let bytes) where from == address:
                _ = deviceFrames.append(bytes)
                for frame in frames(&deviceFrames) {
                    // A type this gateway does not know (firmware 2.x diagnostics, §6.6) is no hit and no report.
                    switch try? LinkMessage(frame: frame) {
                    case .hitEvent(let hit)?:
                        hitsBySequence.append(
                            (frame.header.sequence, Hit(boot: hit.bootCounter, sequence: Int64(hit.eventSequence))))
                    case .configData(let config)?:
                        reportsBySequence.append((frame.header.sequence, config))
                    case .deviceInfo?:
                        hitsBySequence.removeAll()
                        reportsBySequence.removeAll()
                        gatewayFrames = FrameDecoder()
                    default:
                        continue
                    }
                }
            case .committed(let at, _, let stored) where at == address:
                for key in stored { committed.insert(Hit(boot: key.bootCounter, sequence: key.sequence)) }
            case .settingsStored(let at, _, let config) where at == address:
                storedReports.insert(config)
            case .wrote(let to, let bytes) where to == address:
                _ = gatewayFrames.append(bytes)
                for frame in frames(&gatewayFrames) {
                    guard case .ack(let ack) = try LinkMessage(frame: frame) else { continue }
                    result.acks += 1
                    // Sequence numbers wrap: only the latest window of frames can be meant.
                    for (sequence, hit) in hitsBySequence.suffix(64) where ack.covers(sequence) {
                        guard committed.contains(hit) else { throw Violation(frame: "hit \(hit)") }
                        acknowledged.insert(hit)
                    }
                    for (sequence, config) in reportsBySequence.suffix(64) where ack.covers(sequence) {
                        guard storedReports.contains(config) else {
                            throw Violation(frame: "CONFIG_DATA of version \(config.version) (frame \(sequence.rawValue))")
                        }
                        acknowledgedReports.insert(config)
                    }
                }
            default:
                continue
            }
        }
        result.acknowledged = acknowledged.count
        result.acknowledgedReports = acknowledgedReports.count
        return result
    }
}
