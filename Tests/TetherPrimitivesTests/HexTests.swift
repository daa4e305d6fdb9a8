import Testing
import TetherPrimitives

/// `Hex`, the one hex encoder: values worked by hand.
struct HexTests {
    @Test func bytesAsLowercaseDigits() {
        #expect(Hex.encode([0x00, 0x0F, 0xA5, 0xFF]) == "000fa5ff")
        #expect(Hex.encode([0x02, 0x78], separator: " ") == "02 78")
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.byte(0x0A) == "0a")
    }

    @Test func sixteenBitsAsFourUppercaseDigits() {
        #expect(Hex.uppercase4(0x2A35) == "2A35")
        #expect(Hex.uppercase4(0x0001) == "0001")
        #expect(Hex.uppercase4(0xFFFF) == "FFFF")
    }

    @Test func decodingTakesEitherCaseAndRefusesTheRest() {
        #expect(Hex.decode("000fA5Ff") == [0x00, 0x0F, 0xA5, 0xFF])
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("abc") == nil, "an odd count of digits")
        #expect(Hex.decode("0g") == nil)
    }
}
