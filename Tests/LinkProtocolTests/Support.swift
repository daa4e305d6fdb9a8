@testable import LinkProtocol
import TetherPrimitives

/// The CRC of §4.3 computed bit by bit, independent of the table-driven implementation under test.
func referenceCRC(_ bytes: [UInt8]) -> UInt16 {
    var crc: UInt16 = 0xFFFF
    for byte in bytes {
        crc ^= UInt16(byte) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
    }
    return crc
}

/// A frame assembled by hand from §4's layout: header, payload, CRC little-endian.
func handFrame(version: UInt8, type: UInt8, flags: UInt8 = 0, sequence: UInt16, payload: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = [0x54, version, type, flags, UInt8(sequence & 0xFF), UInt8(sequence >> 8), UInt8(payload.count)] + payload
    let crc = referenceCRC(bytes)
    bytes += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    return bytes
}

/// All frames and errors a decoder yields for a list of ATT values. With `stallAtEnd`, bytes still buffered at
/// the end are treated as the session's stall timer treats them (§3.4): abandoned a byte at a time, so frames
/// hidden behind a corrupt length are found.
func decodeAll(_ values: [[UInt8]], stallAtEnd: Bool = false) -> (frames: [Frame], errors: [FrameError]) {
    var decoder = FrameDecoder()
    var frames: [Frame] = []
    var errors: [FrameError] = []
    func drain() {
        while true {
            do {
                guard let frame = try decoder.decode() else { break }
                frames.append(frame)
            } catch {
                errors.append(error)
            }
        }
    }
    for value in values {
        decoder.append(value)
        drain()
    }
    while stallAtEnd, let abandoned = decoder.abandonStalledFrame() {
        errors.append(abandoned)
        drain()
    }
    return (frames, errors)
}

let t0 = Timestamp(nanoseconds: 1_793_520_000_000_000_000)

extension Timestamp {
    func plus(milliseconds: Int64) -> Timestamp { advanced(by: .milliseconds(milliseconds)) }
}
