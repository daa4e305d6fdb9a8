import Testing
@testable import LinkProtocol
import TetherPrimitives

@Suite("CRC-16/IBM-3740 (§4.3)")
struct CRC16Tests {
    @Test("check value of \"123456789\" is 0x29B1")
    func checkValue() {
        #expect(CRC16.checksum(Array("123456789".utf8)) == 0x29B1)
    }

    @Test("empty input leaves the initial value")
    func empty() {
        #expect(CRC16.checksum([UInt8]()) == 0xFFFF)
    }

    @Test("table-driven CRC equals a bitwise reference on random inputs")
    func matchesBitwiseReference() {
        var generator = SplitMix64(seed: 7)
        for length in 0..<64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(CRC16.checksum(bytes) == bitwiseCRC(bytes), "length \(length)")
        }
    }

    private func bitwiseCRC(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }
}
