/// The E2E-CRC of the Continuous Glucose Monitoring Service (CGMS v1.0.1 §3.11 "CRC Calculation"): CRC-16/MCRF4XX,
/// polynomial 0x1021 reflected (0x8408), initial value 0xFFFF, no final XOR, sent least significant octet first.
public enum E2ECRC {
    public static func compute<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 {
                crc = crc & 1 != 0 ? (crc >> 1) ^ 0x8408 : crc >> 1
            }
        }
        return crc
    }
}
