import LinkProtocol
import TetherPrimitives

/// The crash test's stand-in for BLE: one line per fact, between the driver (playing the devices) and the
/// gateway child. Device bytes are hex.
///
///     C <device> <mtu> <address>   driver → gateway: the link is up
///     R <device> <hex>             driver → gateway: an ATT notification from the device
///     D <device>                   driver → gateway: the link is down
///     ready                        gateway → driver: database open, accepting links
///     W <device> <hex>             gateway → driver: an ATT write to the device
///     X <device>                   gateway → driver: the gateway drops the link
///     S <device> <key>             gateway → driver: this event is durably stored (printed after its ACK)
enum CrashLine: Hashable, Sendable {
    case connect(device: Int, mtu: Int, address: String)
    case received(device: Int, bytes: [UInt8])
    case disconnected(device: Int)
    case ready
    case write(device: Int, bytes: [UInt8])
    case gatewayDisconnect(device: Int)
    case stored(device: Int, key: EventKey)

    init?(_ line: String) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard let tag = fields.first else { return nil }
        if tag == "ready" {
            self = .ready
            return
        }
        guard fields.count >= 2, let device = Int(fields[1]) else { return nil }
        switch (tag, fields.count) {
        case ("C", 4):
            guard let mtu = Int(fields[2]) else { return nil }
            self = .connect(device: device, mtu: mtu, address: String(fields[3]))
        case ("R", 3):
            guard let bytes = Hex.decode(fields[2]) else { return nil }
            self = .received(device: device, bytes: bytes)
        case ("D", 2):
            self = .disconnected(device: device)
        case ("W", 3):
            guard let bytes = Hex.decode(fields[2]) else { return nil }
            self = .write(device: device, bytes: bytes)
        case ("X", 2):
            self = .gatewayDisconnect(device: device)
        case ("S", 3):
            let parts = fields[2].split(separator: "/")
            guard parts.count >= 3, let sequence = Int64(parts[parts.count - 1]), let boot = UInt16(parts[parts.count - 2]) else { return nil }
            self = .stored(device: device, key: EventKey(serial: parts.dropLast(2).joined(separator: "/"), bootCounter: boot, sequence: sequence))
        default:
            return nil
        }
    }

    var text: String {
        switch self {
        case .connect(let device, let mtu, let address): "C \(device) \(mtu) \(address)"
        case .received(let device, let bytes): "R \(device) \(Hex.encode(bytes))"
        case .disconnected(let device): "D \(device)"
        case .ready: "ready"
        case .write(let device, let bytes): "W \(device) \(Hex.encode(bytes))"
        case .gatewayDisconnect(let device): "X \(device)"
        case .stored(let device, let key): "S \(device) \(key)"
        }
    }
}

/// Splits a byte stream into lines; a partial line waits for the rest.
struct LineBuffer {
    private var pending: [UInt8] = []

    mutating func append(_ bytes: some Collection<UInt8>) -> [String] {
        var lines: [String] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                lines.append(String(decoding: pending, as: UTF8.self))
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(byte)
            }
        }
        return lines
    }
}
