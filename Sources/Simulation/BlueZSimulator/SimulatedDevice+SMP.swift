import DBus
import Foundation
import SMP
import SMPDeviceModel
import TetherPrimitives

/// The MCUmgr SMP GATT service of a device configured with `smp` (Zephyr "SMP Transport Specification", "Bluetooth
/// Low Energy (LE)"; include/zephyr/mgmt/mcumgr/transport/smp_bt.h for the UUIDs; smp_bt.c `SMP_BT_ATTRS` for the
/// declaration): one characteristic with write-without-response and notify, and its CCCD.
enum SMPGattLayout {
    static let service = SMPBluetoothUUID.service
    static let characteristic = SMPBluetoothUUID.characteristic

    /// The service after the device's other services: at the next free multiple of 0x10, its characteristic's
    /// declaration one handle later (value + 1) and the CCCD after the value (Core v5.3 Vol 3 Part G §3.3).
    static func service(after others: [SimulatedGattService]) -> SimulatedGattService {
        let last = others.map(\.handle).max() ?? 0
        let handle = (last / 0x10 + 1) * 0x10
        return SimulatedGattService(
            handle: handle, uuid: service, primary: true,
            characteristics: [
                SimulatedGattCharacteristic(
                    handle: handle + 1, uuid: characteristic, flags: ["write-without-response", "notify"], role: .smp,
                    descriptors: [SimulatedGattDescriptor(handle: handle + 3, uuid: TetherGattLayout.cccd, role: .smpClientConfiguration)])
            ])
    }
}

/// The device side of the SMP characteristic. Writes (WriteValue type "command", or packets on an AcquireWrite socket)
/// go to `SMPBluetoothServer`, which reassembles requests and answers through the `SMPDevice` model; the response's
/// notifications wait in `smpOutbox` for the link's connection events (SimulatedDevice+Link), as the Tether TX's do,
/// and reach clients as BlueZ delivers them: a Value PropertiesChanged per StartNotify session, or one packet on the
/// AcquireNotify socket. With neither, the CCCD is off and Zephyr's bt_gatt_notify has no one to send to: the
/// response is lost (smp_bt.c `smp_bt_tx_pkt`).
extension SimulatedDevice {
    var smpPath: DBusObjectPath { characteristicPath(role: .smp) }
    var isSMPNotifying: Bool { !smpNotifySessions.isEmpty }
    var isSMPNotifyAcquired: Bool { smpNotifySocket != nil }
    var isSMPWriteAcquired: Bool { smpWriteSocket != nil }

    /// Where tests read the device model: its slots, its upload, what it answered and dropped.
    public var smpDevice: SMPDevice? { smp?.device }

    /// Changes the device model (a test's fault: `crashingImages`); nil for a device without the SMP service.
    @discardableResult
    public func withSMPDevice<T: Sendable>(_ body: @Sendable (inout SMPDevice) -> T) -> T? { smp?.withDevice(body) }

    /// A Write Without Response from the gateway: it waits for a connection event to cross the link (LinkModel),
    /// unless the link is unthrottled and nothing is ahead of it.
    func smpWritten(_ bytes: [UInt8]) {
        guard smp != nil, isConnected else { return }
        writesReceived += 1
        if link.unthrottled, smpBusy == nil, smpInbox.isEmpty {
            smpDeliver(bytes)
        } else {
            smpInbox.append(bytes)
        }
    }

    /// A write arrives at the device. An answer waits for the flash time the request took
    /// (`SMPDevice.lastBusyTime`: the slot's erase before the first chunk, each chunk's write), as Zephyr's handler
    /// answers only after flash_area_erase/flash_area_write return (img_mgmt.c).
    private func smpDeliver(_ bytes: [UInt8]) {
        switch smp!.write(bytes, attMTU: Int(link.mtu)) {
        case .collecting, .dropped:
            break
        case .answered(let notifications, let rebooted):
            let answered = isSMPNotifying || isSMPNotifyAcquired ? notifications : []
            let busy = smp!.device.lastBusyTime
            if busy > .zero {
                smpBusy = (ContinuousClock.now + busy, answered, rebooted)
                return
            }
            smpOutbox += answered
            if rebooted { smpRebootPending = true }
        }
    }

    func startSMPNotify(sender: String) throws {
        startNotifyCalls += 1
        guard isConnected else { throw BlueZError.notConnected }
        guard smpNotifySocket == nil else { throw BlueZError.notPermitted("Notify acquired") }
        guard !smpNotifySessions.contains(sender) else { return }
        smpNotifySessions.append(sender)
        if smpNotifySessions.count == 1 { emit(["Notifying": .bool(true)], at: smpPath) }
    }

    func stopSMPNotify(sender: String) throws {
        guard let index = smpNotifySessions.firstIndex(of: sender) else { throw BlueZError.failed("No notify session started") }
        smpNotifySessions.remove(at: index)
        if smpNotifySessions.isEmpty {
            smpCCCDOff()
            emit(["Notifying": .bool(false)], at: smpPath)
        }
    }

    func acquireSMPNotify() throws -> (OwnedFileDescriptor, UInt16) {
        guard isConnected else { throw BlueZError.notConnected }
        guard smpNotifySocket == nil, smpNotifySessions.isEmpty else { throw BlueZError.notPermitted("Notify acquired") }
        socketNumber += 1
        let (socket, clientEnd) = try SeqPacketSocket.makePair(id: socketNumber)
        smpNotifySocket = socket
        emit(["NotifyAcquired": .bool(true)], at: smpPath)
        watch(socket)
        return (clientEnd, link.mtu)
    }

    func acquireSMPWrite() throws -> (OwnedFileDescriptor, UInt16) {
        guard isConnected else { throw BlueZError.notConnected }
        guard smpWriteSocket == nil else { throw BlueZError.notPermitted("Write acquired") }
        socketNumber += 1
        let (socket, clientEnd) = try SeqPacketSocket.makePair(id: socketNumber)
        smpWriteSocket = socket
        emit(["WriteAcquired": .bool(true)], at: smpPath)
        watch(socket)
        return (clientEnd, link.mtu)
    }

    /// A packet on one of the SMP sockets; false when the socket is not the SMP write socket.
    func smpSocketPacket(_ bytes: [UInt8], from id: UInt64) -> Bool {
        guard smpWriteSocket?.id == id else { return false }
        smpWritten(bytes)
        return true
    }

    /// An SMP socket closed by its client; false when it is not one of them.
    func smpSocketClosed(_ id: UInt64) -> Bool {
        if smpNotifySocket?.id == id {
            smpNotifySocket = nil
            smpCCCDOff()
            emit(["NotifyAcquired": .bool(false)], at: smpPath)
            return true
        }
        if smpWriteSocket?.id == id {
            smpWriteSocket = nil
            emit(["WriteAcquired": .bool(false)], at: smpPath)
            return true
        }
        return false
    }

    func smpClientVanished(_ name: String) {
        guard smpNotifySessions.contains(name) else { return }
        try? stopSMPNotify(sender: name)
    }

    /// The CCCD went to 0 (SMPBluetoothServer rule 5): a partial request is dropped, and queued notifications have
    /// no one to go to.
    private func smpCCCDOff() {
        guard !isSMPNotifying, !isSMPNotifyAcquired else { return }
        smp?.linkLost()
        smpOutbox.removeAll()
        smpBusy?.notifications.removeAll()
    }

    /// The link went down (or bluetoothd went away, `announce` false): the client's CCCD is cleared, sockets end.
    func smpLinkDown(announce: Bool) {
        guard smp != nil else { return }
        smp!.linkLost()
        smpOutbox.removeAll()
        smpInbox.removeAll()
        smpBusy = nil
        smpRebootPending = false
        for socket in [smpNotifySocket, smpWriteSocket].compactMap({ $0 }) { socket.shutDown() }
        if announce, smpNotifySocket != nil { emit(["NotifyAcquired": .bool(false)], at: smpPath) }
        if announce, smpWriteSocket != nil { emit(["WriteAcquired": .bool(false)], at: smpPath) }
        smpNotifySocket = nil
        smpWriteSocket = nil
        if announce, !smpNotifySessions.isEmpty { emit(["Notifying": .bool(false)], at: smpPath) }
        smpNotifySessions.removeAll()
    }

    /// One connection event's share of the SMP notifications (at most `budget`); returns how many went out. Once the
    /// answer to a reset is out, the device reboots and the link drops as a supervision time-out at the central.
    ///
    /// Before the notifications, the gateway's writes cross: up to `writeBudget` of them (a connection event carries
    /// packets both ways, one each way per exchange), none while the flash is busy; an answer whose flash time is
    /// over joins the notifications.
    func smpConnectionEvent(budget: Int, writeBudget: Int) async -> Int {
        guard smp != nil, isConnected else { return 0 }
        var writes = max(writeBudget, 0)
        while true {
            if let busy = smpBusy {
                guard ContinuousClock.now >= busy.until else { break }
                smpBusy = nil
                smpOutbox += busy.notifications
                if busy.rebooted { smpRebootPending = true }
            }
            guard writes > 0, !smpInbox.isEmpty else { break }
            writes -= 1
            smpDeliver(smpInbox.removeFirst())
        }
        let count = link.unthrottled ? smpOutbox.count : min(smpOutbox.count, max(budget, 0))
        let batch = smpOutbox.prefix(count)
        smpOutbox.removeFirst(count)
        for value in batch { sendSMPNotification(value) }
        if smpRebootPending, smpOutbox.isEmpty {
            // The whole chip reboots: the Tether firmware beside the SMP server too (SMPBluetoothServer rule 6).
            smpRebootPending = false
            firmware.reboot(at: WallClock.now())
            await dropLink(reason: ("org.bluez.Reason.Timeout", "Connection timed out"))
        }
        return count
    }

    func sendSMPNotification(_ value: [UInt8]) {
        smpValue = value
        smpNotifySocket?.send(value)
        for _ in smpNotifySessions {
            emit(["Value": .bytes(value)], at: smpPath, interface: BlueZInterface.gattCharacteristic)
        }
        notificationsSent += 1
    }
}
