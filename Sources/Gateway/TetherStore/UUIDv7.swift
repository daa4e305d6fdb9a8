import Foundation
import LinkProtocol
import TetherPrimitives

/// UUID version 7 (RFC 9562 §5.7): 48 bits of Unix milliseconds, then 74 random bits. Time-ordered, so outbox
/// ids sort roughly by creation; random enough to serve as the backend's idempotency key.
///
/// Time and randomness are parameters: tests and replays get reproducible ids from a manual clock and a seed.
public enum UUIDv7 {
    public static func make(unixMilliseconds: Int64, using random: inout some RandomNumberGenerator) -> UUID {
        let milliseconds = UInt64(clamping: max(0, min(unixMilliseconds, Int64(1) << 48 - 1)))
        let high = random.next()
        let low = random.next()
        var bytes: [UInt8] = (0..<6).map { UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * $0)) }
        bytes.append(0x70 | UInt8(truncatingIfNeeded: high >> 8) & 0x0F)  // version 7, rand_a high nibble
        bytes.append(UInt8(truncatingIfNeeded: high))  // rand_a low byte
        bytes.append(0x80 | UInt8(truncatingIfNeeded: low >> 56) & 0x3F)  // variant 0b10, rand_b
        for index in 0..<7 { bytes.append(UInt8(truncatingIfNeeded: low >> (8 * index))) }
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    public static func make(at instant: Timestamp, using random: inout some RandomNumberGenerator) -> UUID {
        make(unixMilliseconds: instant.nanoseconds / 1_000_000, using: &random)
    }

    /// The canonical lowercase text form (`8-4-4-4-12` hex digits), as the outbox stores ids. Written directly:
    /// `uuidString.lowercased()` costs two allocations and a Unicode case mapping per command.
    public static func lowercaseString(_ uuid: UUID) -> String {
        let digits: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { buffer in
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        buffer[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    buffer[index] = digits.utf8Start[Int(byte >> 4)]
                    buffer[index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    index += 2
                }
                return index
            }
        }
    }

    /// The Unix milliseconds of a version-7 UUID, `nil` for any other version or variant.
    public static func unixMilliseconds(of uuid: UUID) -> Int64? {
        let bytes = uuid.uuid
        guard bytes.6 >> 4 == 7, bytes.8 >> 6 == 0b10 else { return nil }
        let fields = [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5]
        return fields.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }
}
