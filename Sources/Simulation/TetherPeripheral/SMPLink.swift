import DBus
import Foundation
import SMPDeviceModel
import TetherPrimitives

/// The device's MCUmgr SMP server (Zephyr with MCUboot: `SMPBluetoothServer` in front of `SMPDevice`) bound to the
/// SMP characteristic bluetoothd serves for this GATT application.
///
///  1. Requests arrive as Write Without Response: through `AcquireWrite`'s socket, one packet per ATT Write Command
///     in the central's order, or as WriteValue calls (before bluetoothd acquired the socket). Order matters: a
///     request split over several writes is reassembled from them (SMPBluetoothServer rule 1).
///  2. A response goes out as notifications (one `Value` PropertiesChanged each) only while the central has
///     notifications on, as bluetoothd reported through StartNotify/StopNotify; otherwise Zephyr's bt_gatt_notify has
///     no one to send to and the response is lost (smp_bt.c `smp_bt_tx_pkt`).
///  3. An answer waits for the flash time its request took (`SMPDevice.lastBusyTime`).
///  4. A reset is answered first; then the whole chip reboots (SMPBluetoothServer rule 6): `reboot` is called once the
///     answer has been handed to bluetoothd, and MCUboot's swap has already happened in the model (MCUbootSlots).
///  5. The link going down drops a partial request (SMPBluetoothServer rule 5).
actor SMPLink {
    private var server: SMPBluetoothServer
    private let log: EventLog
    private let notify: @Sendable ([UInt8]) -> Void
    private var reboot: (@Sendable () async -> Void)?
    private var subscribed = false
    private var writeSocket: PacketSocket?
    private let factoryHash: [UInt8]
    private(set) var lastValue: [UInt8] = []

    init(server: SMPBluetoothServer, log: EventLog, notify: @escaping @Sendable ([UInt8]) -> Void) {
        self.server = server
        self.log = log
        self.notify = notify
        factoryHash = server.device.slots.primary.hash
    }

    /// Rule 4's reboot: the peripheral's power cycle.
    func onReboot(_ reboot: @escaping @Sendable () async -> Void) { self.reboot = reboot }

    var isNotifying: Bool { subscribed }
    var isWriteAcquired: Bool { writeSocket != nil }
    var slots: MCUbootSlots { server.device.slots }

    /// The device runs an image other than the one it was made with, confirmed: an update that finished.
    var runsConfirmedUpdate: Bool { slots.primary.hash != factoryHash && slots.primaryConfirmed }

    // MARK: - Facts from BlueZ

    func startNotify() {
        guard !subscribed else { return }
        subscribed = true
        log.note("smp-subscribed")
    }

    func stopNotify() {
        guard subscribed else { return }
        subscribed = false
        server.linkLost()
        log.note("smp-unsubscribed")
    }

    /// Rule 5.
    func centralDisconnected() {
        writeSocket?.shutDown()
        writeSocket = nil
        server.linkLost()
    }

    /// Rule 1: one Write Command. `mtu` is bluetoothd's "mtu" option (23 when it is absent, always safe).
    func write(_ bytes: [UInt8], mtu: Int?) async {
        let requestsBefore = server.requestsAnswered
        switch server.write(bytes, attMTU: mtu ?? 23) {
        case .collecting(let missing):
            log.note("smp-collecting", ["bytes": bytes.count, "missing": missing])
        case .dropped(let reason):
            log.note("smp-write-dropped", ["reason": "\(reason)", "bytes": bytes.count])
        case .answered(let notifications, let rebooted):
            let busy = server.device.lastBusyTime
            if busy > .zero { try? await Task.sleep(for: busy) }  // rule 3
            // One line per answered request (an upload is tens of them), so a run's log shows where an update stood.
            log.note("smp-answered", [
                "request": requestsBefore + 1, "bytes": bytes.count, "answerBytes": notifications.reduce(0) { $0 + $1.count },
                "offset": server.device.uploadOffset ?? -1,
            ])
            if subscribed {
                for value in notifications {
                    lastValue = value
                    notify(value)
                }
            } else {
                log.note("smp-answer-lost", ["reason": "notifications off"])
            }
            if rebooted { await rebootAfterAnswer() }
        }
    }

    /// Rule 1: bluetoothd's `AcquireWrite`. Packets are handled one after another, each to its end (its flash time
    /// included), as Zephyr's single SMP work queue does.
    func acquireWrite(mtu: Int?) throws -> OwnedFileDescriptor {
        writeSocket?.shutDown()
        let (socket, theirs) = try PacketSocket.makePair()
        writeSocket = socket
        log.note("smp-write-acquired", ["mtu": mtu ?? 23])
        Task {
            for await packet in socket.packets { await self.write(packet, mtu: mtu) }
            self.writeReleased(socket)
        }
        return theirs
    }

    private func writeReleased(_ socket: PacketSocket) {
        guard writeSocket === socket else { return }
        writeSocket = nil
    }

    /// Rule 4. The pause lets bluetoothd send the answer's notifications before the radio goes off.
    private func rebootAfterAnswer() async {
        let slots = server.device.slots
        log.note("smp-reset", [
            "running": slots.primary.version, "runningHash": Hex.encode(slots.primary.hash),
            "confirmed": slots.primaryConfirmed, "resets": slots.resets,
        ])
        server.linkLost()
        guard let reboot else { return }
        Task {
            try? await Task.sleep(for: .milliseconds(300))
            await reboot()
        }
    }
}
