import Testing
@testable import LinkProtocol
import TetherPrimitives

@Suite("Frame decoder: reassembly and resynchronisation (§3)")
struct FrameDecoderTests {
    /// A stream of assorted frames: small, one spanning several MTU-23 values, and back to back.
    static let stream: [[UInt8]] = [
        handFrame(version: 1, type: 0x10, sequence: 1, payload: [1, 0, 1, 0, 10, 0, 0, 0, 100, 0, 50]),
        handFrame(version: 1, type: 0x31, sequence: 2, payload: [7, 0, 0, 0] + Array(repeating: 0x54, count: 60)),
        handFrame(version: 1, type: 0x11, sequence: 3, payload: [0x6E, 0x0F, 82, 1]),
        handFrame(version: 1, type: 0x20, sequence: 4, payload: []),
    ]
    static var bytes: [UInt8] { stream.flatMap { $0 } }

    @Test("the stream decodes identically when cut at every single point")
    func everySplitPoint() throws {
        let bytes = Self.bytes
        for cut in 0...bytes.count {
            let (frames, errors) = decodeAll([Array(bytes[..<cut]), Array(bytes[cut...])])
            #expect(errors.isEmpty, "cut at \(cut)")
            #expect(frames.map { Array($0.payload) } == Self.stream.map { Array($0[7..<($0.count - 2)]) }, "cut at \(cut)")
        }
    }

    @Test("byte-at-a-time and every pair of cuts give the same frames")
    func dripFeed() {
        let bytes = Self.bytes
        let (frames, errors) = decodeAll(bytes.map { [$0] })
        #expect(errors.isEmpty)
        #expect(frames.count == 4)
        for first in stride(from: 0, through: bytes.count, by: 7) {
            for second in stride(from: first, through: bytes.count, by: 5) {
                let (frames, errors) = decodeAll([Array(bytes[..<first]), Array(bytes[first..<second]), Array(bytes[second...])])
                #expect(errors.isEmpty && frames.count == 4, "cuts \(first), \(second)")
            }
        }
    }

    @Test("nil means more bytes are needed and nothing is lost")
    func needMoreBytes() throws {
        var decoder = FrameDecoder()
        let frame = Self.stream[0]
        decoder.append(frame.prefix(6))
        #expect(try decoder.decode() == nil)
        decoder.append(frame[6..<(frame.count - 1)])
        #expect(try decoder.decode() == nil)
        #expect(decoder.bufferedByteCount == frame.count - 1)
        decoder.append(frame.suffix(1))
        #expect(try decoder.decode()?.header.sequence == SequenceNumber(1))
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("every single-bit flip is rejected, never decoded as a wrong frame, and the next frame survives")
    func everyBitFlip() {
        let victim = Self.stream[0]
        let follower = Self.stream[2]
        for index in victim.indices {
            for bit in 0..<8 {
                var corrupted = victim
                corrupted[index] ^= 1 << bit
                let (frames, errors) = decodeAll([corrupted + follower], stallAtEnd: true)
                // The corrupted frame never comes out, in any form: every header and payload byte is under the CRC.
                #expect(!frames.contains { $0.header.sequence != SequenceNumber(3) }, "byte \(index) bit \(bit): corrupted frame accepted")
                #expect(frames.map(\.header.sequence) == [SequenceNumber(3)], "byte \(index) bit \(bit): follower lost")
                #expect(!errors.isEmpty, "byte \(index) bit \(bit): corruption unnoticed")
            }
        }
    }

    @Test("a bad CRC names the sequence from the header as a hint (§4.3)")
    func badCRC() {
        var corrupted = Self.stream[0]
        corrupted[10] ^= 0x01
        let (frames, errors) = decodeAll([corrupted])
        #expect(frames.isEmpty)
        #expect(errors.first?.code == .badCRC)
        #expect(errors.first?.sequence == SequenceNumber(1))
        #expect(errors.first?.nackReason == .badCRC)
    }

    @Test("a frame cut short by a complete next one is truncated at once, and the next one decodes")
    func truncatedByNextFrame() {
        // 30 of 73 bytes, then frames enough to fill the claimed length: the CRC fails and a valid frame is found
        // inside the claimed span.
        let cut = Array(Self.stream[1].prefix(30))
        let (frames, errors) = decodeAll([cut, Self.stream[2], Self.stream[0], Self.stream[0], Self.stream[0]])
        #expect(errors.map(\.code) == [.truncated])
        #expect(errors.first?.sequence == SequenceNumber(2))
        #expect(frames.map(\.header.sequence) == [SequenceNumber(3), SequenceNumber(1), SequenceNumber(1), SequenceNumber(1)])
    }

    @Test("a stalled partial frame is abandoned and what follows it is found (§3.4)")
    func stall() throws {
        var decoder = FrameDecoder()
        decoder.append(Self.stream[1].prefix(30))
        decoder.append(Self.stream[3])  // shorter than the missing tail: the decoder waits for more
        #expect(try decoder.decode() == nil)
        let abandoned = decoder.abandonStalledFrame()
        #expect(abandoned?.code == .truncated)
        #expect(abandoned?.sequence == SequenceNumber(2))
        var found: [SequenceNumber] = []
        var errors: [FrameError] = []
        while true {
            do {
                guard let frame = try decoder.decode() else { break }
                found.append(frame.header.sequence)
            } catch {
                errors.append(error)
            }
        }
        #expect(found == [SequenceNumber(4)])
        // The abandoned frame's payload is all magic bytes (0x54): the resynchronisation keeps the first candidate
        // whose length fits the buffer, and that phantom is rejected, once, when the real next frame cuts it short.
        // Nothing else is rejected, and the phantom never passes for a frame.
        #expect(errors.map(\.code) == [.truncated], "\(errors)")
        #expect(errors.first?.sequence == SequenceNumber(0x5454))
    }

    @Test("junk before a frame is skipped and reported once")
    func junk() {
        let (frames, errors) = decodeAll([[0x00, 0x01, 0x02] + Self.stream[0]])
        #expect(frames.count == 1)
        #expect(errors.map(\.code) == [.unsynchronized])
        #expect(errors.first?.discardedBytes == 3)
    }

    @Test("a length over 240 is rejected without waiting for 241 bytes")
    func lengthOutOfRange() {
        let header: [UInt8] = [0x54, 1, 0x10, 0, 0, 0, 241]
        let (frames, errors) = decodeAll([header + Self.stream[0]])
        #expect(frames.count == 1)
        #expect(errors.first?.code == .lengthOutOfRange)
    }

    @Test("a peer that overruns the buffer loses its oldest bytes, not the decoder's bound (§3.5)")
    func overrun() throws {
        var decoder = FrameDecoder()
        let partial: [UInt8] = [0x54, 1, 0x31, 0, 0, 0, 240]
        decoder.append(partial)
        var dropped = 0
        for _ in 0..<10 { dropped += decoder.append([UInt8](repeating: 0x00, count: 200)) }
        #expect(dropped > 0)
        #expect(decoder.bufferedByteCount <= FrameDecoder.bufferLimit)
    }

    @Test("a maximum frame (240-byte payload) round-trips in 20-byte values")
    func maximumFrame() {
        let big = handFrame(version: 1, type: 0x31, sequence: 65535, payload: [1, 0, 0, 0] + Array(repeating: 0xAB, count: 236))
        #expect(big.count == FrameHeader.maxFrameSize)
        let values = FrameEncoder.segments(of: big, valueSize: 20)
        #expect(values.allSatisfy { $0.count <= 20 })
        let (frames, errors) = decodeAll(values)
        #expect(errors.isEmpty)
        #expect(frames.first?.header.sequence == SequenceNumber(65535))
    }

    @Test("random garbage never crashes the decoder and valid frames after it are found")
    func randomGarbage() {
        var random = SplitMix64(seed: 99)
        for _ in 0..<300 {
            let garbage = (0..<Int.random(in: 0..<300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            // A partial "frame" in the garbage may swallow what follows until the stall timer gives it up.
            let (frames, _) = decodeAll([garbage, Self.stream[0], Self.stream[2]], stallAtEnd: true)
            #expect(frames.contains { $0.header.sequence == SequenceNumber(3) })
        }
    }

    @Test("ATT value size follows MTU − 3 within the safety bounds (§3.1, §3.2)", arguments: [(23, 20), (24, 21), (185, 182), (247, 244), (517, 244), (10, 20)])
    func valueSize(mtu: Int, size: Int) {
        #expect(FrameEncoder.attValueSize(mtu: mtu) == size)
    }
}
