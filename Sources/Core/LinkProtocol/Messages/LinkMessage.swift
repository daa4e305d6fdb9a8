import TetherPrimitives
/// Every message of §7 with its meaning; the frame header (§4) is kept apart in `FrameHeader`.
public enum LinkMessage: Hashable, Sendable {
    case hello(Hello)
    case deviceInfo(DeviceInfo)
    case ack(Ack)
    case nack(Nack)
    case hitEvent(HitEvent)
    case batteryStatus(BatteryStatus)
    case sleep(SleepNotice)
    case timeSyncRequest
    case timeSyncResponse(TimeSyncResponse)
    case getConfig
    case configData(DeviceConfig)
    case setConfig(DeviceConfig)

    public var type: MessageType {
        switch self {
        case .hello: .hello
        case .deviceInfo: .deviceInfo
        case .ack: .ack
        case .nack: .nack
        case .hitEvent: .hitEvent
        case .batteryStatus: .batteryStatus
        case .sleep: .sleep
        case .timeSyncRequest: .timeSyncRequest
        case .timeSyncResponse: .timeSyncResponse
        case .getConfig: .getConfig
        case .configData: .configData
        case .setConfig: .setConfig
        }
    }

    /// Decodes a frame's payload by its type and version. Trailing bytes after the known layout are ignored
    /// (§6.3); an unknown type is `unknownType` (§6.6); a short or out-of-range payload is `malformed`.
    public init(frame: Frame) throws(FrameError) {
        let header = frame.header
        guard let type = MessageType(rawValue: header.type) else {
            throw FrameError(.unknownType, sequence: header.sequence, type: header.type,
                             reason: "type 0x\(String(header.type, radix: 16)) is not in §7")
        }
        var reader = ByteReader(frame.payload)
        do {
            switch type {
            case .hello: self = .hello(try Hello(reading: &reader))
            case .deviceInfo: self = .deviceInfo(try DeviceInfo(reading: &reader))
            case .ack: self = .ack(try Ack(reading: &reader))
            case .nack: self = .nack(try Nack(reading: &reader))
            case .hitEvent: self = .hitEvent(try HitEvent(reading: &reader, version: header.version))
            case .batteryStatus: self = .batteryStatus(try BatteryStatus(reading: &reader))
            case .sleep: self = .sleep(try SleepNotice(reading: &reader))
            case .timeSyncRequest: self = .timeSyncRequest
            case .timeSyncResponse: self = .timeSyncResponse(try TimeSyncResponse(reading: &reader))
            case .getConfig: self = .getConfig
            case .configData: self = .configData(try DeviceConfig(reading: &reader))
            case .setConfig: self = .setConfig(try DeviceConfig(reading: &reader))
            }
        } catch {
            var error = error
            error.sequence = header.sequence
            error.type = header.type
            throw error
        }
    }

    /// The payload bytes of this message in a protocol version.
    public func payload(version: UInt8) -> [UInt8] {
        var writer = ByteWriter(capacity: 16)
        switch self {
        case .hello(let hello): hello.write(to: &writer)
        case .deviceInfo(let info): info.write(to: &writer)
        case .ack(let ack): ack.write(to: &writer)
        case .nack(let nack): nack.write(to: &writer)
        case .hitEvent(let hit): hit.write(to: &writer, version: version)
        case .batteryStatus(let battery): battery.write(to: &writer)
        case .sleep(let sleep): sleep.write(to: &writer)
        case .timeSyncRequest, .getConfig: break
        case .timeSyncResponse(let response): response.write(to: &writer)
        case .configData(let config), .setConfig(let config): config.write(to: &writer)
        }
        return writer.bytes
    }

    /// Appends this message as one frame to an outgoing stream.
    public func append(version: UInt8, sequence: SequenceNumber, flags: FrameFlags = [], to stream: inout [UInt8]) {
        FrameEncoder.append(
            version: version, type: type.rawValue, flags: flags, sequence: sequence,
            payload: payload(version: version), to: &stream)
    }

    /// This message as one frame.
    public func frame(version: UInt8, sequence: SequenceNumber, flags: FrameFlags = []) -> [UInt8] {
        var stream: [UInt8] = []
        append(version: version, sequence: sequence, flags: flags, to: &stream)
        return stream
    }
}
