/// The message types of §7.
public enum MessageType: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case hello = 0x01
    case deviceInfo = 0x02
    case ack = 0x83
    case nack = 0x84
    case hitEvent = 0x10
    case batteryStatus = 0x11
    case sleep = 0x12
    case timeSyncRequest = 0x20
    case timeSyncResponse = 0xA1
    case getConfig = 0x30
    case configData = 0x31
    case setConfig = 0x32

    /// §8.1: frames the device keeps until they are acknowledged.
    public var isReliable: Bool {
        switch self {
        case .deviceInfo, .hitEvent, .batteryStatus, .sleep, .configData: true
        case .hello, .ack, .nack, .timeSyncRequest, .timeSyncResponse, .getConfig, .setConfig: false
        }
    }

    /// §5.1: a device-sent frame whose type has bit 7 set is unreliable and consumes no sequence number. The rule is
    /// read from the code, so it holds for types this gateway does not know (§6.6).
    public static func consumesDeviceSequence(typeCode: UInt8) -> Bool { typeCode & 0x80 == 0 }

    /// Whether the device sends this type (the gateway sends the others; NACK goes both ways).
    public var isSentByDevice: Bool {
        switch self {
        case .deviceInfo, .nack, .hitEvent, .batteryStatus, .sleep, .timeSyncResponse, .configData: true
        case .hello, .ack, .timeSyncRequest, .getConfig, .setConfig: false
        }
    }

    public var isSentByGateway: Bool { self == .nack || !isSentByDevice }

    public var description: String {
        switch self {
        case .hello: "HELLO"
        case .deviceInfo: "DEVICE_INFO"
        case .ack: "ACK"
        case .nack: "NACK"
        case .hitEvent: "HIT_EVENT"
        case .batteryStatus: "BATTERY_STATUS"
        case .sleep: "SLEEP"
        case .timeSyncRequest: "TIME_SYNC_REQUEST"
        case .timeSyncResponse: "TIME_SYNC_RESPONSE"
        case .getConfig: "GET_CONFIG"
        case .configData: "CONFIG_DATA"
        case .setConfig: "SET_CONFIG"
        }
    }
}

/// Protocol versions (§6.7).
public enum ProtocolVersion {
    /// Firmware 1.x: 16-bit event sequence in HIT_EVENT.
    public static let v1: UInt8 = 1
    /// Firmware 2.x: 32-bit event sequence in HIT_EVENT.
    public static let v2: UInt8 = 2
    /// What this gateway speaks.
    public static let supported: ClosedRange<UInt8> = v1...v2
    /// §6.2: HELLO frames always carry version 1 in their header.
    public static let helloHeaderVersion: UInt8 = v1

    /// §6.1: the highest version in both ranges, if they overlap.
    public static func negotiate(_ a: ClosedRange<UInt8>, _ b: ClosedRange<UInt8>) -> UInt8? {
        let low = max(a.lowerBound, b.lowerBound)
        let high = min(a.upperBound, b.upperBound)
        return low <= high ? high : nil
    }
}
