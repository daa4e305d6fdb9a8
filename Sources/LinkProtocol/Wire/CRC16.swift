/// CRC-16/IBM-3740 (also called CRC-16/CCITT-FALSE), the frame integrity check of §4.3.
///
/// Parameters: width 16, polynomial 0x1021, initial value 0xFFFF, not reflected, final XOR 0x0000,
/// check value 0x29B1 for the ASCII bytes "123456789". Table-driven, one byte per step: frames are at most
/// 249 bytes, so a wider slicing table would cost more cache than it saves.
public enum CRC16 {
    public static let initialValue: UInt16 = 0xFFFF

    static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 {
            crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }

    /// Continues a CRC over `bytes`.
    public static func update(_ crc: UInt16, _ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var crc = crc
        table.withUnsafeBufferPointer { table in
            for byte in bytes {
                crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
            }
        }
        return crc
    }

    /// The CRC of a whole byte sequence.
    public static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt16 where Bytes.Element == UInt8 {
        if let crc = bytes.withContiguousStorageIfAvailable({ update(initialValue, UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { update(initialValue, $0) }
    }
}
