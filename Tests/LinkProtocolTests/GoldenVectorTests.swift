import Testing
@testable import LinkProtocol
import TetherSettings

/// Every message against bytes written by hand from §7's layouts, both ways.
@Suite("Golden vectors (§4, §7)")
struct GoldenVectorTests {
    static let info = DeviceInfo(hardwareRevision: 3, firmware: FirmwareVersion(major: 1, minor: 4, patch: 2), bootCounter: 0x0102, capabilities: [.battery, .sleep], versions: 1...2, serial: "TT-7")
    static let config = DeviceConfig(version: 0x01020304, settings: DeviceSettings(sensitivity: 7, ledBrightness: 40, hapticFeedback: true, sleepTimeoutSeconds: 300, dailyLimit: 150))

    static let vectors: [(String, LinkMessage, UInt8, [UInt8])] = [
        ("HELLO", .hello(Hello(versions: 1...2, window: 16)), 0x01, [1, 2, 16]),
        ("DEVICE_INFO", .deviceInfo(info), 0x02, [3, 1, 4, 2, 0x02, 0x01, 0x09, 0x00, 1, 2, 4] + Array("TT-7".utf8)),
        ("ACK", .ack(Ack(through: SequenceNumber(0x1234), selective: 0x8000_0001)), 0x83, [0x34, 0x12, 0x01, 0x00, 0x00, 0x80]),
        ("NACK", .nack(Nack(sequence: SequenceNumber(7), reason: .unsupportedVersion, detail: [1, 2])), 0x84, [7, 0, 3, 1, 2]),
        ("HIT_EVENT v1", .hitEvent(HitEvent(eventSequence: 0x0A0B, bootCounter: 2, ticks: 0x0102_0304, durationMilliseconds: 1500, intensity: 80)), 0x10, [0x0B, 0x0A, 2, 0, 0x04, 0x03, 0x02, 0x01, 0xDC, 0x05, 80]),
        ("BATTERY_STATUS", .batteryStatus(BatteryStatus(millivolts: 3950, percent: 82, isCharging: true)), 0x11, [0x6E, 0x0F, 82, 1]),
        ("SLEEP", .sleep(SleepNotice(reason: .lowBattery, wakeAfterSeconds: 600)), 0x12, [2, 0x58, 0x02, 0, 0]),
        ("SLEEP unknown wake", .sleep(SleepNotice(reason: .idle, wakeAfterSeconds: nil)), 0x12, [1, 0xFF, 0xFF, 0xFF, 0xFF]),
        ("TIME_SYNC_REQUEST", .timeSyncRequest, 0x20, []),
        ("TIME_SYNC_RESPONSE", .timeSyncResponse(TimeSyncResponse(requestSequence: SequenceNumber(5), bootCounter: 2, receiveTicks: 1000, transmitTicks: 1002)), 0xA1, [5, 0, 2, 0, 0xE8, 0x03, 0, 0, 0xEA, 0x03, 0, 0]),
        ("GET_CONFIG", .getConfig, 0x30, []),
        ("CONFIG_DATA", .configData(config), 0x31, [4, 3, 2, 1, 1, 1, 7, 2, 1, 40, 3, 1, 1, 4, 2, 0x2C, 0x01, 5, 2, 150, 0]),
        ("SET_CONFIG", .setConfig(DeviceConfig(version: 9, settings: DeviceSettings(sensitivity: 2))), 0x32, [9, 0, 0, 0, 1, 1, 2]),
    ]

    @Test("encodes to the hand-built frame and decodes back", arguments: vectors.indices)
    func vector(index: Int) throws {
        let (name, message, type, payload) = Self.vectors[index]
        let expected = handFrame(version: 1, type: type, sequence: 0x0203, payload: payload)
        #expect(message.frame(version: 1, sequence: SequenceNumber(0x0203)) == expected, "\(name)")
        let (frames, errors) = decodeAll([expected])
        #expect(errors.isEmpty, "\(name)")
        let frame = try #require(frames.first)
        #expect(frame.header.type == type)
        #expect(frame.header.sequence == SequenceNumber(0x0203))
        #expect(try LinkMessage(frame: frame) == message, "\(name)")
    }

    @Test("a version-1 HIT_EVENT frame is exactly 20 bytes (§4.4) and version 2 widens the sequence (§6.7)")
    func hitSizes() throws {
        let hit = HitEvent(eventSequence: 0x0001_0203, bootCounter: 1, ticks: 5, durationMilliseconds: 6, intensity: 7)
        #expect(LinkMessage.hitEvent(hit).frame(version: 1, sequence: SequenceNumber(0)).count == 20)
        let v2 = LinkMessage.hitEvent(hit).frame(version: 2, sequence: SequenceNumber(0))
        #expect(v2 == handFrame(version: 2, type: 0x10, sequence: 0, payload: [3, 2, 1, 0, 1, 0, 5, 0, 0, 0, 6, 0, 7]))
        // Version 1 keeps the low 16 bits; the gateway widens them again (§8.9).
        let v1 = try LinkMessage(frame: decodeAll([LinkMessage.hitEvent(hit).frame(version: 1, sequence: SequenceNumber(0))]).frames[0])
        #expect(v1 == .hitEvent(HitEvent(eventSequence: 0x0203, bootCounter: 1, ticks: 5, durationMilliseconds: 6, intensity: 7)))
    }

    @Test("payloads shorter than their layout are malformed, longer ones keep their known fields (§6.3)", arguments: vectors.indices)
    func shortAndLong(index: Int) throws {
        let (name, message, type, payload) = Self.vectors[index]
        if !payload.isEmpty {
            let short = handFrame(version: 1, type: type, sequence: 1, payload: Array(payload.dropLast()))
            let frame = try #require(decodeAll([short]).frames.first)
            // NACK detail, config TLVs and the serial are variable: dropping a byte there is malformed or a
            // shorter valid message, never a crash and never the original message.
            if let decoded = try? LinkMessage(frame: frame) { #expect(decoded != message, "\(name)") }
        }
        guard ![0x84, 0x31, 0x32].contains(type) else { return }  // these end in variable-length data
        let long = handFrame(version: 1, type: type, sequence: 1, payload: payload + [0xEE, 0xEE])
        let frame = try #require(decodeAll([long]).frames.first)
        #expect(try LinkMessage(frame: frame) == message, "\(name)")
    }

    static let outOfRangePayloads: [(UInt8, [UInt8])] = [
        (0x10, [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 101]),  // intensity 101
        (0x11, [0, 0, 101, 0]),  // battery 101 %
        (0x01, [2, 1, 8]),  // HELLO versions 2…1
        (0x01, [1, 2, 33]),  // HELLO window 33
        (0x02, [3, 1, 4, 2, 1, 0, 0, 0, 1, 1, 0]),  // serial length 0
        (0x02, [3, 1, 4, 2, 1, 0, 0, 0, 1, 1, 2, 0x41, 0x07]),  // serial not printable
        (0x31, [1, 0, 0, 0, 1, 1, 11]),  // sensitivity 11
        (0x31, [1, 0, 0, 0, 4, 2, 5, 0]),  // sleep timeout 5 s
        (0x31, [1, 0, 0, 0, 1, 2, 5, 0]),  // sensitivity as two bytes
        (0x31, [1, 0, 0, 0, 9, 4, 1]),  // TLV cut short
        (0x84, [1, 0, 99]),  // NACK reason 99
        (0xA1, [1, 0, 1, 0, 0x10, 0x27, 0, 0, 0x00, 0x00, 0, 0]),  // response "sent" 55 s before it arrived
    ]

    @Test("out-of-range fields are malformed", arguments: outOfRangePayloads.indices)
    func outOfRange(index: Int) throws {
        let (type, payload) = Self.outOfRangePayloads[index]
        let frame = try #require(decodeAll([handFrame(version: 1, type: type, sequence: 4, payload: payload)]).frames.first)
        #expect {
            _ = try LinkMessage(frame: frame)
        } throws: { error in
            (error as? FrameError)?.code == .malformed && (error as? FrameError)?.sequence == SequenceNumber(4)
        }
    }

    @Test("unknown setting keys are kept unchanged (§7.11)")
    func unknownSettingKeys() throws {
        let payload: [UInt8] = [2, 0, 0, 0, 1, 1, 3, 0x40, 3, 0xAA, 0xBB, 0xCC]
        let frame = try #require(decodeAll([handFrame(version: 1, type: 0x31, sequence: 0, payload: payload)]).frames.first)
        guard case .configData(let config) = try LinkMessage(frame: frame) else { Issue.record("not CONFIG_DATA"); return }
        #expect(config.settings.sensitivity == 3)
        #expect(config.settings.unknown == [.init(key: 0x40, value: [0xAA, 0xBB, 0xCC])])
        #expect(LinkMessage.configData(config).payload(version: 1) == payload)
    }

    @Test("an unknown type is unknownType with its sequence number (§6.6)")
    func unknownType() throws {
        let frame = try #require(decodeAll([handFrame(version: 2, type: 0x13, sequence: 9, payload: [1, 2])]).frames.first)
        #expect {
            _ = try LinkMessage(frame: frame)
        } throws: { error in
            (error as? FrameError)?.code == .unknownType && (error as? FrameError)?.sequence == SequenceNumber(9)
        }
        #expect(MessageType.consumesDeviceSequence(typeCode: 0x13))
        #expect(!MessageType.consumesDeviceSequence(typeCode: 0xB0))
    }
}
