/// CRC-16/IBM-3740 (also called CRC-16/CCITT-FALSE), the frame integrity check of §4.3.
///
/// Parameters: width 16, polynomial 0x1021, initial value 0xFFFF, not reflected, final XOR 0x0000,
/// check value 0x29B1 for the ASCII bytes "123456789". Slicing-by-4: four 256-entry tables (2 KiB) let four
/// bytes share one dependency chain instead of four.
public enum CRC16 {
    public static let initialValue: UInt16 = 0xFFFF

    /// `tables[k * 256 + i]`: the CRC contribution of byte value `i` followed by `k` zero bytes.
    static let tables: [UInt16] = {
        var tables = [UInt16](repeating: 0, count: 4 * 256)
        for index in 0..<256 {
            var crc = UInt16(index) << 8
            for _ in 0..<8 { crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
            tables[index] = crc
        }
        for k in 1..<4 {
            for index in 0..<256 {
                let previous = tables[(k - 1) * 256 + index]
                tables[k * 256 + index] = (previous << 8) ^ tables[Int(previous >> 8)]
            }
        }
        return tables
    }()

    /// Continues a CRC over `bytes`.
    public static func update(_ crc: UInt16, _ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var crc = crc
        tables.withUnsafeBufferPointer { t in
            guard var p = bytes.baseAddress else { return }
            var count = bytes.count
            while count >= 4 {
                let x = crc ^ (UInt16(p.load(as: UInt8.self)) << 8 | UInt16(p.load(fromByteOffset: 1, as: UInt8.self)))
                crc = t[3 * 256 + Int(x >> 8)] ^ t[2 * 256 + Int(x & 0xFF)]
                    ^ t[256 + Int(p.load(fromByteOffset: 2, as: UInt8.self))] ^ t[Int(p.load(fromByteOffset: 3, as: UInt8.self))]
                p += 4
                count -= 4
            }
            while count > 0 {
                crc = (crc << 8) ^ t[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ p.load(as: UInt8.self))]
                p += 1
                count -= 1
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
