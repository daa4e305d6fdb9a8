// libFuzzer target for the gateway's link session state machine (§5–§11).
//
// The input is a script. Byte 0 picks the configuration (window, versions, burst length). Then each step is one
// op byte — low 4 bits the op, high 4 bits how far the manual clock moves first (0, then 1 ms … 16 s) — and the
// op's operands. Ops: connect, raw ATT bytes, a well-formed device message (with a choice of sequence number,
// version, flags, corruption and split points), fire an armed timer, a store completing or failing, disconnect,
// MTU change, desired-config change. The harness plays the daemon: it fires only timers the session armed, at
// their deadline, and completes only batches the session asked to persist.
//
// Traps (real bugs): any crash inside the session, and broken orders: an ATT value over the MTU, a gateway frame
// that does not decode or takes the wrong sequence number (§5.1), an ACK that moves backwards (§7.3), a write
// ordered after a disconnect, a timer left armed once the connection is gone.

import FuzzSupport
import LinkProtocol
import TetherPrimitives
import TetherSettings

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    var harness = Harness(setup: input.byte())
    while !input.isEmpty { harness.step(&input) }
    return 0
}

struct Harness {
    var session: LinkSession
    var now = Timestamp(nanoseconds: 1_750_000_000_000_000_000)
    var mtu = 23
    var linkUp = false
    var timers: [LinkTimer: Timestamp] = [:]
    var batches: [PersistBatch.ID] = []

    // What the device has seen of the gateway's stream in this connection.
    var gatewayStream = FrameDecoder()
    var gatewayNextSequence = SequenceNumber(0)
    var lastRequest = SequenceNumber(0)
    var lastTimeSync = SequenceNumber(0)
    var lastAck: Ack?

    // The device's own counters.
    var deviceNextSequence = SequenceNumber(0)
    var boot: UInt16 = 7
    var eventSequence: UInt32 = 0
    var ticks: UInt32 = 5_000

    init(setup: UInt8) {
        var configuration = LinkSessionConfiguration()
        configuration.window = [16, 1, 2, 32][Int(setup & 3)]
        configuration.versions = [ProtocolVersion.supported, 1...1, 2...2, 1...2][Int(setup >> 2 & 3)]
        configuration.timeSyncBurst = [5, 1, 2, 3][Int(setup >> 4 & 3)]
        let desired = setup & 0x40 != 0 ? DeviceConfig(version: 9, settings: DeviceSettings(sensitivity: 3, dailyLimit: 20)) : nil
        session = LinkSession(configuration: configuration, desiredConfig: desired)
    }

    mutating func step(_ input: inout FuzzInput) {
        let op = input.byte()
        let shift = op >> 4
        if shift > 0 { now = now.advanced(by: .milliseconds(1 << Int64(shift - 1))) }
        trace("@\(now.nanoseconds / 1_000_000 % 1_000_000_000) ms  op \(op & 0x0F)  phase \(session.phase)")
        switch op & 0x0F {
        case 0, 10:
            mtu = Int(input.uint16() % 600)
            linkUp = true
            gatewayStream = FrameDecoder()
            gatewayNextSequence = SequenceNumber(0)
            lastAck = nil
            deviceNextSequence = SequenceNumber(0)
            apply(session.connected(mtu: mtu, at: now))
        case 1:
            let value = input.run(Int(input.byte()))
            apply(session.received(value, at: now))
        case 2, 3, 11, 12:
            sendDeviceFrame(&input)
        case 4, 13:
            fireTimer(input.byte())
        case 5, 14:
            guard let batch = pickBatch(input.byte()) else { return }
            apply(session.persisted(batch, at: now))
        case 6:
            guard let batch = pickBatch(input.byte()) else { return }
            apply(session.persistFailed(batch, reason: .storageFull, at: now))
        case 7:
            linkUp = false
            apply(session.disconnected(at: now))
        case 8:
            mtu = Int(input.uint16() % 600)
            session.mtuChanged(mtu)
        case 9:
            // Valid settings only: callers check them first (`DeviceSettings.validate()`); the session sends as told.
            let settings = DeviceSettings(
                sensitivity: input.bool() ? 1 + input.byte() % 10 : nil, ledBrightness: input.bool() ? input.byte() % 101 : nil,
                hapticFeedback: input.bool() ? input.bool() : nil,
                sleepTimeoutSeconds: input.bool() ? 10 + input.uint16() % 3591 : nil,
                dailyLimit: input.bool() ? input.uint16() % 1001 : nil)
            apply(session.desiredConfigChanged(DeviceConfig(version: UInt32(input.byte()), settings: settings), at: now))
        default:  // 15: a long pause
            now = now.advanced(by: .seconds(Int64(input.uint16())))
        }
    }

    // MARK: - Device side

    mutating func sendDeviceFrame(_ input: inout FuzzInput) {
        let kind = input.byte()
        let variation = input.byte()
        var version: UInt8 = 2
        if case .established(let negotiated) = session.phase { version = negotiated }
        if variation & 0x03 == 0x03 { version = input.byte() }  // a wrong or unknown version (§6.5)

        let type: UInt8
        var payload: [UInt8]
        switch kind % 11 {
        case 0:
            if input.bool() { boot &+= 1 }
            let low = UInt8(input.choice(3) + 1)
            let info = DeviceInfo(
                hardwareRevision: 1, firmware: FirmwareVersion(major: 2, minor: 0, patch: 0), bootCounter: boot,
                capabilities: [.battery], versions: low...(low + UInt8(input.choice(2))),
                serial: ["TTH-0001", "TTH-0002", String(repeating: "Z", count: 32)][input.choice(3)])
            (type, payload) = (MessageType.deviceInfo.rawValue, LinkMessage.deviceInfo(info).payload(version: version))
        case 1, 2, 3:
            let delta = Int8(bitPattern: input.byte())
            if delta > 0 { eventSequence &+= UInt32(delta) } else { eventSequence &-= UInt32(-Int(delta)) }
            ticks &+= UInt32(input.uint16())
            if variation & 0x04 != 0 { boot &+= 1 }
            let hit = HitEvent(
                eventSequence: eventSequence, bootCounter: boot, ticks: variation & 0x08 != 0 ? input.uint32() : ticks,
                durationMilliseconds: input.uint16(), intensity: input.byte() % 101)
            (type, payload) = (MessageType.hitEvent.rawValue, LinkMessage.hitEvent(hit).payload(version: version))
        case 4:
            let battery = BatteryStatus(millivolts: input.uint16(), percent: input.byte() % 101, isCharging: input.bool())
            (type, payload) = (MessageType.batteryStatus.rawValue, LinkMessage.batteryStatus(battery).payload(version: version))
        case 5:
            let sleep = SleepNotice(reason: SleepNotice.Reason(code: input.byte()), wakeAfterSeconds: input.uint32())
            (type, payload) = (MessageType.sleep.rawValue, LinkMessage.sleep(sleep).payload(version: version))
        case 6:
            ticks &+= UInt32(input.uint16())
            let receive = variation & 0x08 != 0 ? input.uint32() : ticks
            let response = TimeSyncResponse(
                requestSequence: variation & 0x10 != 0 ? SequenceNumber(input.uint16()) : lastTimeSync,
                bootCounter: variation & 0x04 != 0 ? input.uint16() : boot,
                receiveTicks: receive, transmitTicks: receive &+ UInt32(input.byte()))
            (type, payload) = (MessageType.timeSyncResponse.rawValue, LinkMessage.timeSyncResponse(response).payload(version: version))
        case 7:
            var config: [UInt8] = [input.byte(), 0, 0, 0]
            for _ in 0..<input.choice(6) {
                let key = input.byte() % 8
                let value = input.run(input.choice(3))
                config += [key, UInt8(value.count)] + value
            }
            (type, payload) = (MessageType.configData.rawValue, config)
        case 8:
            let reason = NackReason.allCases[input.choice(NackReason.allCases.count)]
            let nack = Nack(
                sequence: [lastRequest, lastTimeSync, SequenceNumber(input.uint16())][input.choice(3)], reason: reason,
                detail: Array(input.run(input.choice(3))))
            (type, payload) = (MessageType.nack.rawValue, LinkMessage.nack(nack).payload(version: version))
        case 9:
            // A type the device must not send, or one this gateway does not know (§6.6).
            (type, payload) = (input.byte(), Array(input.run(input.choice(16))))
        default:
            // A known type with a short, long or out-of-range payload.
            let types = MessageType.allCases.filter(\.isSentByDevice)
            (type, payload) = (types[input.choice(types.count)].rawValue, Array(input.run(Int(input.byte()) % 48)))
        }

        // §5.1: reliable types take the next number, unreliable ones carry it; variations retransmit or jump.
        var flags: FrameFlags = []
        var sequence = deviceNextSequence
        switch variation >> 5 {
        case 1:
            sequence = deviceNextSequence.advanced(by: -1 - input.choice(4))
            flags = .retransmit
        case 2:
            sequence = SequenceNumber(input.uint16())
        default:
            if MessageType.consumesDeviceSequence(typeCode: type) { deviceNextSequence = deviceNextSequence.next }
        }
        if payload.count > FrameHeader.maxPayloadLength { payload.removeLast(payload.count - FrameHeader.maxPayloadLength) }
        var frame = FrameEncoder.frame(version: version, type: type, flags: flags, sequence: sequence, payload: payload)
        trace("  device sends type 0x\(String(type, radix: 16)) v\(version) seq \(sequence) flags \(flags.rawValue)")
        if variation & 0x80 != 0 && variation & 0x40 != 0 {
            frame[input.choice(frame.count)] ^= max(1, input.byte())  // damaged in transit (§4.3)
        }
        // The values a BLE link of this MTU delivers, starting at a fuzzer-chosen offset into the first one.
        let valueSize = FrameEncoder.attValueSize(mtu: mtu)
        var offset = 0
        var first = valueSize - min(valueSize - 1, Int(input.byte() >> 3))
        while offset < frame.count {
            let end = min(offset + first, frame.count)
            apply(session.received(frame[offset..<end], at: now))
            offset = end
            first = valueSize
        }
    }

    // MARK: - Daemon side

    mutating func fireTimer(_ choice: UInt8) {
        let armed = timers.sorted { ($0.value, "\($0.key)") < ($1.value, "\($1.key)") }
        guard !armed.isEmpty else { return }
        let (timer, deadline) = armed[Int(choice) % armed.count]
        timers[timer] = nil
        if now < deadline { now = deadline }
        apply(session.timerFired(timer, at: now))
    }

    func pickBatch(_ choice: UInt8) -> PersistBatch.ID? {
        guard !batches.isEmpty else { return nil }
        // Mostly the newest batches, sometimes an old (already completed) one.
        return batches[batches.count - 1 - Int(choice) % min(batches.count, 8)]
    }

    mutating func apply(_ actions: [LinkAction]) {
        if fuzzTrace { for action in actions { trace("    \(action)") } }
        var disconnectOrdered = false
        for action in actions {
            switch action {
            case .write(let value):
                check(!disconnectOrdered, "a write ordered after the disconnect: \(actions)")
                check(linkUp, "a write with no link up")
                check(!value.isEmpty && value.count <= FrameEncoder.attValueSize(mtu: mtu), "ATT value of \(value.count) bytes at MTU \(mtu)")
                readGatewayStream(value)
            case .persist(let batch):
                check(!batches.contains(batch.id), "batch id \(batch.id) reused")
                batches.append(batch.id)
            case .armTimer(let timer, let deadline):
                check(deadline >= now, "\(timer) armed in the past")
                timers[timer] = deadline
            case .cancelTimer(let timer):
                timers[timer] = nil
            case .disconnect:
                disconnectOrdered = true
            case .report:
                break
            }
        }
        switch session.phase {
        case .idle, .closing:
            check(timers.isEmpty, "timers \(timers.keys) still armed in phase \(session.phase)")
        case .hello, .established:
            break
        }
        if disconnectOrdered { linkUp = false }
    }

    /// The device's view of the gateway's frames: every one valid, numbered in order, sent by the right side.
    mutating func readGatewayStream(_ value: [UInt8]) {
        gatewayStream.append(value)
        while true {
            let frame: Frame?
            do {
                frame = try gatewayStream.decode()
            } catch {
                fatalError("the gateway sent bytes that are not a frame: \(error)")
            }
            guard let frame else { return }
            let message: LinkMessage
            do {
                message = try LinkMessage(frame: frame)
            } catch {
                fatalError("the gateway sent a frame whose message does not decode: \(error)")
            }
            check(message.type.isSentByGateway, "the gateway sent \(message.type)")
            if frame.header.flags.contains(.retransmit) {
                check(frame.header.sequence.distance(to: gatewayNextSequence) > 0, "§5.1: a retransmission of a number not yet sent")
            } else {
                check(frame.header.sequence == gatewayNextSequence, "§5.1: gateway frame \(frame.header.sequence), expected \(gatewayNextSequence)")
                gatewayNextSequence = gatewayNextSequence.next
            }
            switch message {
            case .hello, .getConfig, .setConfig: lastRequest = frame.header.sequence
            case .timeSyncRequest: lastTimeSync = frame.header.sequence
            case .ack(let ack):
                if let lastAck {
                    check(lastAck.through.distance(to: ack.through) >= 0, "§7.3: ACK went back from \(lastAck.through) to \(ack.through)")
                }
                lastAck = ack
            default: break
            }
        }
    }
}
