import Foundation
import LinkProtocol
import Testing
@testable import TetherStore
import TetherPrimitives

@Suite("UUIDv7")
struct UUIDv7Tests {
    @Test("version 7, RFC 9562 variant, the timestamp in the first 48 bits")
    func layout() throws {
        var random = SplitMix64(seed: 1)
        for milliseconds: Int64 in [0, 1, 1_793_520_000_123, (1 << 48) - 1] {
            let uuid = UUIDv7.make(unixMilliseconds: milliseconds, using: &random)
            #expect(uuid.uuid.6 >> 4 == 7)
            #expect(uuid.uuid.8 >> 6 == 0b10)
            #expect(UUIDv7.unixMilliseconds(of: uuid) == milliseconds)
            // RFC 9562 §5.7: the text form starts with the 48-bit timestamp in hex (8-4 digits, then the dash).
            let hex = String(milliseconds, radix: 16)
            let timestamp = String(repeating: "0", count: 12 - hex.count) + hex
            #expect(uuid.uuidString.lowercased().prefix(13) == timestamp.prefix(8) + "-" + timestamp.suffix(4))
        }
        #expect(UUIDv7.unixMilliseconds(of: UUIDv7.make(unixMilliseconds: -5, using: &random)) == 0)
        let version4 = try #require(UUID(uuidString: "123e4567-e89b-42d3-a456-426614174000"))
        #expect(UUIDv7.unixMilliseconds(of: version4) == nil)
        #expect(UUIDv7.lowercaseString(version4) == "123e4567-e89b-42d3-a456-426614174000")
    }

    @Test("deterministic for a seed, distinct across draws, ordered by time")
    func determinismAndOrder() {
        var a = SplitMix64(seed: 9)
        var b = SplitMix64(seed: 9)
        let first = (0..<100).map { UUIDv7.make(unixMilliseconds: 1000 + Int64($0), using: &a) }
        let second = (0..<100).map { UUIDv7.make(unixMilliseconds: 1000 + Int64($0), using: &b) }
        #expect(first == second)
        #expect(Set(first).count == 100)
        #expect(first.map { $0.uuidString.lowercased() } == first.map { $0.uuidString.lowercased() }.sorted())
        var c = SplitMix64(seed: 10)
        let sameInstant = (0..<1000).map { _ in UUIDv7.make(unixMilliseconds: 5, using: &c) }
        #expect(Set(sameInstant).count == 1000)
    }
}
