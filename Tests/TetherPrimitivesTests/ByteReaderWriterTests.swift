import TetherPrimitives
import Testing

@Suite struct ByteReaderWriterTests {
    @Test func bothByteOrdersRoundTripAndMatchHandWrittenBytes() {
        var writer = ByteWriter()
        writer.write(UInt16(0x0102))
        writer.write(UInt16(0x0102), .big)
        writer.writeUInt24(0x0A0B0C)
        writer.writeUInt24(0x0A0B0C, .big)
        writer.write(UInt32(0x1122_3344), .big)
        writer.write(UInt64(0x0102_0304_0506_0708))
        // Written out by hand: little-endian puts the low byte first, big-endian the high byte (SMP's header, RFC 9052
        // network order), and a 24-bit value is its low three bytes.
        #expect(writer.bytes == [
            0x02, 0x01, 0x01, 0x02, 0x0C, 0x0B, 0x0A, 0x0A, 0x0B, 0x0C, 0x11, 0x22, 0x33, 0x44,
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
        ])
        var reader = ByteReader(writer.bytes)
        #expect(reader.readUInt16() == 0x0102)
        #expect(reader.readUInt16(.big) == 0x0102)
        #expect(reader.readUInt24() == 0x0A0B0C)
        #expect(reader.readUInt24(.big) == 0x0A0B0C)
        #expect(reader.readUInt32(.big) == 0x1122_3344)
        #expect(reader.readUInt64() == 0x0102_0304_0506_0708)
        #expect(reader.remaining == 0)
        #expect(reader.readUInt8() == nil)
    }

    @Test func aShortReadReturnsNilAndDoesNotMove() {
        var reader = ByteReader([0x01, 0x02, 0x03])
        #expect(reader.readUInt32() == nil)
        #expect(reader.readUInt32(.big) == nil)
        #expect(reader.index == 0)
        #expect(reader.readUInt24(.big) == 0x010203)
        #expect(reader.readBytes(1) == nil)
        #expect(reader.readBytes(-1) == nil)
        #expect(reader.readBytes(0) == [])
    }

    @Test func aSeedReproducesItsSequenceAndChanceHonoursItsBounds() {
        var a = SplitMix64(seed: 42)
        var b = SplitMix64(seed: 42)
        let first = (0..<8).map { _ in a.next() }
        #expect(first == (0..<8).map { _ in b.next() })
        #expect(Set(first).count == 8)
        var c = SplitMix64(seed: 42)
        #expect(!(0..<1000).contains { _ in c.chance(0) })
        #expect((0..<1000).allSatisfy { _ in c.chance(1) })
    }
}
