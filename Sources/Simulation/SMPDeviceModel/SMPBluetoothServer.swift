import SMP

/// The device side of MCUmgr's Bluetooth transport in front of an `SMPDevice`, pure: GATT writes in, notifications
/// out, no clock, no I/O. tether-sim's SMP characteristic (BlueZSimulator, `SimulatedDevice+SMP`) feeds it.
///
/// The transport (Zephyr "SMP Transport Specification", "Bluetooth Low Energy (LE)"; subsys/mgmt/mcumgr/transport/
/// src/smp_bt.c): one characteristic carries requests as Write Without Response and responses as notifications. A
/// message larger than one packet is split with no extra framing; the header of the first fragment says how long the
/// message is. Rules, each from Zephyr's code:
///
///  1. With reassembly (CONFIG_MCUMGR_TRANSPORT_BT_REASSEMBLY; smp_reassembly.c, `smp_reassembly_collect`): the first
///     write of a request must hold the whole 8-byte header (else -ENODATA); header + length over the buffer size
///     (CONFIG_MCUMGR_TRANSPORT_NETBUF_SIZE) is refused (-ENOSR); a write longer than what the message still lacks is
///     refused (-EOVERFLOW) and the partial request dropped. The request goes to the SMP layer once its last byte came.
///  2. Without reassembly (smp_bt.c, `smp_bt_chr_write`'s #else branch): each write is one request on its own, at
///     most the buffer size; the SMP layer drops a write that is not one whole request.
///  3. A refused write is silent: the ATT error smp_bt.c returns has nowhere to go for a Write Without Response
///     (Core v5.3 Vol 3 Part F §3.4.5.3: the server sends no response). The client's request times out.
///  4. Responses go out in notifications of at most ATT_MTU − 3 bytes (smp_bt.c, `smp_bt_conn_get_mtu` and
///     `smp_bt_tx_pkt`), in order; the client reassembles them by the header's length.
///  5. The link going down resets the CCCD's value to 0 (subsys/bluetooth/host/gatt.c, `disconnected_cb`: "If all
///     values are now disabled, reset value while disconnected", calling the CCC's cfg_changed), and smp_bt.c's
///     `smp_bt_ccc_changed(0)` drops a partial request.
///  6. A reset command is answered first and the device reboots after (os_mgmt.c): the link drops with the reboot.
public struct SMPBluetoothServer: Sendable {
    /// Why a write was dropped (rule 3: the client is never told).
    public enum DropReason: Hashable, Sendable {
        /// Rule 1: a first fragment shorter than the SMP header.
        case fragmentShorterThanHeader
        /// Rules 1 and 2: the message (or the write) is larger than the device's buffer.
        case largerThanBuffer
        /// Rule 1: the write holds more bytes than the message still lacks.
        case fragmentOverrunsMessage
        /// Rule 2, or a whole message the SMP layer does not answer (a response, a malformed header).
        case notARequest
    }

    public enum WriteOutcome: Hashable, Sendable {
        /// Rule 1: the fragment was kept; `missing` bytes of the request are still to come.
        case collecting(missing: Int)
        /// A whole request reached the device: its response as notifications (rule 4), and whether the device then
        /// rebooted (rule 6).
        case answered(notifications: [[UInt8]], rebooted: Bool)
        case dropped(DropReason)
    }

    public private(set) var device: SMPDevice
    /// CONFIG_MCUMGR_TRANSPORT_BT_REASSEMBLY.
    public let reassembles: Bool
    /// The request being reassembled (rule 1) and how many bytes it still lacks.
    private var partial: (bytes: [UInt8], missing: Int)?
    /// Observations for tests.
    public private(set) var requestsAnswered = 0
    public private(set) var writesDropped = 0

    public init(device: SMPDevice, reassembles: Bool = true) {
        self.device = device
        self.reassembles = reassembles
    }

    /// Bytes of a request collected so far (0: none in progress).
    public var collectedByteCount: Int { partial?.bytes.count ?? 0 }

    /// Reads or changes the device between writes (tests, fault injection).
    public mutating func withDevice<T>(_ body: (inout SMPDevice) throws -> T) rethrows -> T { try body(&device) }

    /// One Write Without Response of `bytes` on a link whose ATT MTU is `attMTU`.
    public mutating func write(_ bytes: [UInt8], attMTU: Int) -> WriteOutcome {
        let bufferSize = device.configuration.bufferSize
        guard reassembles else {
            // Rule 2.
            guard bytes.count <= bufferSize else { return drop(.largerThanBuffer) }
            return deliver(bytes, attMTU: attMTU)
        }
        // Rule 1.
        var current: (bytes: [UInt8], missing: Int)
        if let partial {
            current = partial
        } else {
            guard bytes.count >= SMPHeader.size else { return drop(.fragmentShorterThanHeader) }
            let expected = SMPHeader.size + (Int(bytes[2]) << 8 | Int(bytes[3]))
            guard bytes.count <= bufferSize, expected <= bufferSize else { return drop(.largerThanBuffer) }
            current = ([], expected)
        }
        guard bytes.count <= current.missing else { return drop(.fragmentOverrunsMessage) }
        current.bytes += bytes
        current.missing -= bytes.count
        guard current.missing == 0 else {
            partial = current
            return .collecting(missing: current.missing)
        }
        partial = nil
        return deliver(current.bytes, attMTU: attMTU)
    }

    /// Rule 5.
    public mutating func linkLost() { partial = nil }

    private mutating func drop(_ reason: DropReason) -> WriteOutcome {
        partial = nil
        writesDropped += 1
        return .dropped(reason)
    }

    private mutating func deliver(_ request: [UInt8], attMTU: Int) -> WriteOutcome {
        let resetsBefore = device.slots.resets
        guard let response = device.handle(request) else { return drop(.notARequest) }
        requestsAnswered += 1
        return .answered(notifications: Self.notifications(response, attMTU: attMTU), rebooted: device.slots.resets != resetsBefore)
    }

    /// Rule 4: `message` cut into notifications of at most `attMTU` − 3 bytes (ATT's Handle Value Notification
    /// carries an opcode and a handle, Core v5.3 Vol 3 Part F §3.4.7.1).
    public static func notifications(_ message: [UInt8], attMTU: Int) -> [[UInt8]] {
        let size = max(attMTU - 3, 1)
        return stride(from: 0, to: message.count, by: size).map { Array(message[$0..<min($0 + size, message.count)]) }
    }
}
