import SMP
import Testing

@testable import TetherCLI

/// How `tether firmware test|confirm` read an image's hash, and how the slots tetherd answers are shown.
struct FirmwareSlotTextTests {
    @Test func aHashIsSixtyFourHexDigitsAndNothingElse() {
        let hash = String(repeating: "0a", count: 32)
        #expect(FirmwareSlotText.parseHash(hash) == Array(repeating: 0x0A, count: 32))
        #expect(FirmwareSlotText.parseHash(hash.uppercased()) == Array(repeating: 0x0A, count: 32))
        #expect(FirmwareSlotText.parseHash(String(hash.dropLast())) == nil)
        #expect(FirmwareSlotText.parseHash(hash + "00") == nil)
        #expect(FirmwareSlotText.parseHash(String(repeating: "0g", count: 32)) == nil)
        // A sign is not a digit (UInt8(_:radix:) took "+f" as 15).
        #expect(FirmwareSlotText.parseHash(String(repeating: "+f", count: 32)) == nil)
    }
}
