import DBus
import TetherDeviceModel
import Foundation
import LinkProtocol
import TetherPrimitives

/// The firmware model bound to one BLE link as BlueZ's peripheral side reports it, with wall-clock time.
///
/// BlueZ tells a GATT application about its link only through its characteristics: StartNotify/StopNotify (the
/// central wrote the CCCD) and WriteValue (with the link's MTU in its options). The device speaks only after HELLO
/// (§2.2), so the firmware hears `connected` at the first write after a subscription, with that write's MTU.
actor DeviceLink {
    private var firmware: DeviceModel
    private let log: EventLog
    private let notify: @Sendable ([UInt8]) -> Void
    private var subscribed = false
    private var linkUp = false
    private var timer: Task<Void, Never>?
    private var writeSocket: PacketSocket?
    private(set) var released = 0
    private(set) var produced = 0
    private(set) var lastValue: [UInt8] = []

    init(profile: DeviceProfile, log: EventLog, notify: @escaping @Sendable ([UInt8]) -> Void) {
        firmware = DeviceModel(profile: profile, bootedAt: WallClock.now())
        self.log = log
        self.notify = notify
    }

    var isNotifying: Bool { subscribed }
    /// The gateway's HELLO came on the current link (§2.2).
    var isLinkUp: Bool { linkUp }
    var isWriteAcquired: Bool { writeSocket != nil }
    var storedEvents: Int { firmware.eventStore.count }
    var config: DeviceConfig { firmware.config }
    var hasUnacknowledgedMessages: Bool { firmware.hasUnacknowledgedMessages }
    var bootCounter: UInt16 { firmware.bootCounter }

    // MARK: - Facts from BlueZ

    func startNotify() {
        guard !subscribed else { return }
        subscribed = true
        log.note("subscribed")
    }

    func stopNotify() {
        guard subscribed else { return }
        subscribed = false
        endLink("unsubscribed")
    }

    /// The central's link is gone (Device1.Connected=false on our adapter).
    ///
    /// The subscription stays as BlueZ last reported it: for a bonded central bluetoothd keeps the CCCD across
    /// connections and calls neither StopNotify at the disconnect nor StartNotify at the reconnect (seen in the
    /// real-BlueZ VM: the central's StartNotify on its second connection never reached the application).
    func centralDisconnected() {
        writeSocket?.shutDown()
        writeSocket = nil
        endLink("disconnected")
    }

    /// One ATT Write Command on RX. `mtu` is BlueZ's "mtu" option (absent before 5.62; 23 is always safe).
    func write(_ bytes: [UInt8], mtu: Int?) {
        let now = WallClock.now()
        if !linkUp {
            guard subscribed else {
                // §2.2: the gateway subscribes before HELLO; a write without a subscription has nowhere to answer.
                log.note("write-before-subscribe", ["bytes": bytes.count])
                return
            }
            linkUp = true
            firmware.connected(mtu: mtu ?? 23, at: now)
            log.note("link-up", ["mtu": mtu ?? 23])
        }
        apply(firmware.received(bytes, at: now))
    }

    /// bluetoothd's `AcquireWrite` (first Write Command on RX): from now on the writes come through a socket, one
    /// packet each, in order. Method calls would not do: the DBus module runs each handler as its own task, so
    /// two WriteValue calls can reach this actor in either order and split frames would be reassembled wrongly.
    func acquireWrite(mtu: Int?) throws -> OwnedFileDescriptor {
        writeSocket?.shutDown()
        let (socket, theirs) = try PacketSocket.makePair()
        writeSocket = socket
        log.note("write-acquired", ["mtu": mtu ?? 23])
        Task {
            for await packet in socket.packets { self.write(packet, mtu: mtu) }
            self.writeReleased(socket)
        }
        return theirs
    }

    private func writeReleased(_ socket: PacketSocket) {
        guard writeSocket === socket else { return }
        writeSocket = nil
        log.note("write-released")
    }

    // MARK: - Facts from the device

    func recordHit(index: Int) {
        let now = WallClock.now()
        let (event, actions) = firmware.recordHit(
            durationMilliseconds: UInt16(600 + (index * 37) % 1400), intensity: UInt8(30 + (index * 13) % 70), at: now)
        if let event {
            produced += 1
            log.hitProduced(event)
        } else {
            log.note("hit-refused-store-full")
        }
        apply(actions)
    }

    /// Power cycle: boot counter + 1, ticks from zero, the link gone, unacknowledged events kept.
    func reboot() {
        endLink("reboot")
        firmware.reboot(at: WallClock.now())
        log.note("rebooted", ["boot": Int(firmware.bootCounter), "kept": firmware.eventStore.count])
    }

    // MARK: - Firmware orders

    private func endLink(_ reason: String) {
        timer?.cancel()
        timer = nil
        guard linkUp else { return }
        linkUp = false
        firmware.disconnected(at: WallClock.now())
        log.note("link-down", ["reason": reason])
    }

    private func apply(_ actions: [DeviceAction]) {
        for action in actions {
            switch action {
            case .notify(let value):
                lastValue = value
                if subscribed { notify(value) }
            case .disconnect:
                // Only SLEEP leads here; this device never asks to sleep.
                log.note("firmware-disconnect")
            case .released(let events):
                released += events.count
                log.hitsReleased(events)
            case .settings(let fact):
                log.settings(fact)
            }
        }
        armTimer()
    }

    /// One task waits for the firmware's next deadline (retransmission, §8.4).
    private func armTimer() {
        timer?.cancel()
        guard let deadline = firmware.nextDeadline else { return }
        timer = Task { [weak self] in
            let wait = deadline.nanoseconds - WallClock.now().nanoseconds
            if wait > 0 { try? await Task.sleep(for: .nanoseconds(wait)) }
            guard !Task.isCancelled else { return }
            await self?.timerFired()
        }
    }

    private func timerFired() {
        timer = nil
        apply(firmware.handleTimeout(at: WallClock.now()))
    }
}
