import TetherPrimitives
/// BATTERY_STATUS (§7.6).
public struct BatteryStatus: Hashable, Sendable {
    public var millivolts: UInt16
    public var percent: UInt8
    public var isCharging: Bool

    public init(millivolts: UInt16, percent: UInt8, isCharging: Bool) {
        self.millivolts = millivolts
        self.percent = percent
        self.isCharging = isCharging
    }

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let millivolts = reader.readUInt16(), let percent = reader.readUInt8(), let flags = reader.readUInt8() else {
            throw FrameError(.malformed, reason: "BATTERY_STATUS needs 4 bytes")
        }
        guard percent <= 100 else { throw FrameError(.malformed, reason: "BATTERY_STATUS percent \(percent) over 100") }
        self.init(millivolts: millivolts, percent: percent, isCharging: flags & 1 != 0)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(millivolts)
        writer.write(percent)
        writer.write(UInt8(isCharging ? 1 : 0))
    }
}

/// SLEEP (§7.7): the device is about to sleep and disconnect.
public struct SleepNotice: Hashable, Sendable {
    public enum Reason: Hashable, Sendable, CustomStringConvertible {
        case idle, lowBattery, userRequest, schedule
        /// A code from a newer firmware; kept, not rejected (§6.3).
        case other(UInt8)

        public init(code: UInt8) {
            switch code {
            case 1: self = .idle
            case 2: self = .lowBattery
            case 3: self = .userRequest
            case 4: self = .schedule
            default: self = .other(code)
            }
        }

        public var code: UInt8 {
            switch self {
            case .idle: 1
            case .lowBattery: 2
            case .userRequest: 3
            case .schedule: 4
            case .other(let code): code
            }
        }

        public var description: String {
            switch self {
            case .idle: "idle"
            case .lowBattery: "lowBattery"
            case .userRequest: "userRequest"
            case .schedule: "schedule"
            case .other(let code): "reason\(code)"
            }
        }
    }

    public var reason: Reason
    /// Seconds until the device expects to wake, `nil` when unknown (`0xFFFFFFFF` on the wire).
    public var wakeAfterSeconds: UInt32?

    public init(reason: Reason, wakeAfterSeconds: UInt32?) {
        self.reason = reason
        self.wakeAfterSeconds = wakeAfterSeconds
    }

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let code = reader.readUInt8(), let wake = reader.readUInt32() else {
            throw FrameError(.malformed, reason: "SLEEP needs 5 bytes")
        }
        self.init(reason: Reason(code: code), wakeAfterSeconds: wake == .max ? nil : wake)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(reason.code)
        writer.write(wakeAfterSeconds ?? .max)
    }
}

/// TIME_SYNC_RESPONSE (§7.9): the device's clock at the request's arrival and at the response's departure.
public struct TimeSyncResponse: Hashable, Sendable {
    public var requestSequence: SequenceNumber
    public var bootCounter: UInt16
    public var receiveTicks: UInt32
    public var transmitTicks: UInt32

    public init(requestSequence: SequenceNumber, bootCounter: UInt16, receiveTicks: UInt32, transmitTicks: UInt32) {
        self.requestSequence = requestSequence
        self.bootCounter = bootCounter
        self.receiveTicks = receiveTicks
        self.transmitTicks = transmitTicks
    }

    init(reading reader: inout ByteReader) throws(FrameError) {
        guard let request = reader.readUInt16(), let boot = reader.readUInt16(), let rx = reader.readUInt32(),
            let tx = reader.readUInt32()
        else { throw FrameError(.malformed, reason: "TIME_SYNC_RESPONSE needs 12 bytes") }
        // A response cannot leave before its request arrived (ticks wrap, so compare as a wrapping difference).
        guard tx &- rx < 60_000 else {
            throw FrameError(.malformed, reason: "TIME_SYNC_RESPONSE says it took \(tx &- rx) ms to answer")
        }
        self.init(requestSequence: SequenceNumber(request), bootCounter: boot, receiveTicks: rx, transmitTicks: tx)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(requestSequence.rawValue)
        writer.write(bootCounter)
        writer.write(receiveTicks)
        writer.write(transmitTicks)
    }
}
