import HealthDeviceModel
import TetherPrimitives

/// Writes ATT traffic into a btsnoop file (RFC 1761-style header "btsnoop\0", version 1, datalink 1002 = HCI UART
/// H4; records with big-endian lengths, flags and a microsecond timestamp counted from year 0, as Wireshark's
/// wiretap/btsnoop.c reads them), so that Wireshark's own dissector can decode what a simulated device sent.
///
/// Wireshark names an ATT value only when it knows the handle's UUID, which it learns from the discovery in the
/// capture: so each connection starts with an LE Connection Complete event, a Read By Group Type exchange for the
/// primary services and a Read By Type exchange (0x2803) for the characteristic declarations.
struct BTSnoopWriter {
    /// Microseconds from 0000-01-01 to 1970-01-01 (wiretap/btsnoop.c, KUnixTimeBase).
    static let unixEpochMicroseconds: Int64 = 0x00DC_DDB3_0F2F_8000
    private(set) var records: [UInt8] = []
    private var microseconds: Int64 = 1_700_000_000_000_000

    enum Direction {
        case hostToDevice
        case deviceToHost
    }

    private mutating func record(_ packet: [UInt8], received: Bool, commandOrEvent: Bool) {
        microseconds += 1250
        var writer = ByteWriter()
        writer.write(UInt32(packet.count), .big)
        writer.write(UInt32(packet.count), .big)
        writer.write(UInt32((received ? 1 : 0) | (commandOrEvent ? 2 : 0)), .big)
        writer.write(UInt32(0), .big)
        writer.write(UInt64(bitPattern: Self.unixEpochMicroseconds + microseconds), .big)
        records += writer.bytes + packet
    }

    /// HCI LE Connection Complete (Core v5.3 Vol 4 Part E §7.7.65.1), so the capture has an LE link for `handle`.
    mutating func connectionComplete(handle: UInt16) {
        var event = ByteWriter()
        event.write(UInt8(0x01))  // subevent
        event.write(UInt8(0x00))  // status
        event.write(handle)
        event.write(UInt8(0x00))  // central
        event.write(UInt8(0x01))  // random peer address
        event.write(contentsOf: [0x01, 0x00, 0x00, 0x45, 0x48, 0xC0])
        event.write(UInt16(24))
        event.write(UInt16(0))
        event.write(UInt16(72))
        event.write(UInt8(0))
        record([0x04, 0x3E, UInt8(event.bytes.count)] + event.bytes, received: true, commandOrEvent: true)
    }

    /// One ATT PDU on the LE ACL link `handle` (H4 type 0x02, PB flag "first automatically flushable", L2CAP CID 4).
    mutating func att(_ pdu: [UInt8], handle: UInt16, _ direction: Direction) {
        var packet = ByteWriter()
        packet.write(UInt8(0x02))
        packet.write(handle | 0x2000)
        packet.write(UInt16(pdu.count + 4))
        packet.write(UInt16(pdu.count))
        packet.write(UInt16(0x0004))
        packet.write(contentsOf: pdu)
        record(packet.bytes, received: direction == .deviceToHost, commandOrEvent: false)
    }

    /// The discovery Wireshark learns handles from, for services laid out as the simulator exports them
    /// (HealthGattMapping: service i at 0x10·(i+1), characteristic k's declaration at service + 1 + 3k).
    mutating func discovery(of services: [HealthServiceDeclaration], handle: UInt16) {
        connectionComplete(handle: handle)
        for (index, service) in services.enumerated() {
            let start = UInt16(0x10 * (index + 1))
            let end = start + 0x0F
            att(Self.pdu(0x10, [start, 0xFFFF, 0x2800]), handle: handle, .hostToDevice)
            att([0x11, 6] + Self.words([start, end, service.uuid]), handle: handle, .deviceToHost)
            att(Self.pdu(0x08, [start, end, 0x2803]), handle: handle, .hostToDevice)
            var entries: [UInt8] = []
            for (k, characteristic) in service.characteristics.enumerated() {
                let declaration = start + 1 + UInt16(3 * k)
                let properties = characteristic.properties.reduce(UInt8(0)) { bits, property in
                    // Core v5.3 Vol 3 Part G §3.3.1.1 Characteristic Properties.
                    switch property {
                    case .read: bits | 0x02
                    case .write: bits | 0x08
                    case .notify: bits | 0x10
                    case .indicate: bits | 0x20
                    }
                }
                entries += Self.words([declaration]) + [properties] + Self.words([declaration + 1, characteristic.uuid])
            }
            att([0x09, 7] + entries, handle: handle, .deviceToHost)
        }
    }

    /// The value handle of `uuid` in that layout.
    static func valueHandle(of uuid: UInt16, in services: [HealthServiceDeclaration]) -> UInt16? {
        for (index, service) in services.enumerated() {
            if let k = service.characteristics.firstIndex(where: { $0.uuid == uuid }) {
                return UInt16(0x10 * (index + 1)) + 2 + UInt16(3 * k)
            }
        }
        return nil
    }

    static func words(_ values: [UInt16]) -> [UInt8] { values.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }
    static func pdu(_ opcode: UInt8, _ values: [UInt16]) -> [UInt8] { [opcode] + words(values) }

    var file: [UInt8] {
        var header = ByteWriter()
        header.write(contentsOf: Array("btsnoop".utf8) + [0])
        header.write(UInt32(1), .big)
        header.write(UInt32(1002), .big)
        return header.bytes + records
    }
}
