import CBOR
import Testing

/// What the decoder refuses and bounds: RFC 8949 §3 and Appendix F's not-well-formed examples, limits on depth,
/// items and size, hostile lengths, trailing bytes, typed access.
struct DecoderRulesTests {
    func code(_ hex: String, limits: CBORLimits = CBORLimits()) -> CBORError? {
        do {
            _ = try CBORDecoder(limits: limits).decode(hexBytes(hex))
            return nil
        } catch {
            return error
        }
    }

    /// RFC 8949 Appendix F.1's examples of not-well-formed items, one per kind of error.
    @Test func appendixFNotWellFormedExamplesAreRefused() {
        // Reserved additional information 28…30 (F.1 "Reserved additional information values").
        #expect(code("1c") == CBORError(.reservedAdditionalInfo, at: 0))
        #expect(code("5d") == CBORError(.reservedAdditionalInfo, at: 0))
        #expect(code("fe") == CBORError(.reservedAdditionalInfo, at: 0))
        // Two-byte encoding of simple values below 32 (F.1 "Reserved two-byte encodings of simple values").
        #expect(code("f800")?.code == .invalidSimpleValue)
        #expect(code("f818")?.code == .invalidSimpleValue)
        #expect(code("f81f")?.code == .invalidSimpleValue)
        // Indefinite-length strings with chunks of the wrong major type, or indefinite chunks (F.1).
        #expect(code("5f00ff") == CBORError(.invalidChunk, at: 1))
        #expect(code("5f21ff")?.code == .invalidChunk)
        #expect(code("5f6100ff")?.code == .invalidChunk)
        #expect(code("5f80ff")?.code == .invalidChunk)
        #expect(code("5fc000ff")?.code == .invalidChunk)
        #expect(code("7f4100ff")?.code == .invalidChunk)
        #expect(code("7f7f6100ffff")?.code == .invalidChunk)
        // Indefinite length on major types 0, 1, 6 and a break outside an indefinite item (F.1).
        #expect(code("1f")?.code == .unexpectedIndefiniteOrBreak)
        #expect(code("3f")?.code == .unexpectedIndefiniteOrBreak)
        #expect(code("df")?.code == .unexpectedIndefiniteOrBreak)
        #expect(code("ff")?.code == .unexpectedIndefiniteOrBreak)
        #expect(code("81ff")?.code == .unexpectedIndefiniteOrBreak)
        #expect(code("8200ff")?.code == .unexpectedIndefiniteOrBreak)
        // A map whose last key has no value: definite (too few items, truncated) and indefinite (a break in place).
        #expect(code("a10000a1")?.code == .trailingBytes)
        #expect(code("bf00ff") == CBORError(.unexpectedIndefiniteOrBreak, at: 2))
        #expect(code("a100")?.code == .truncated)
    }

    @Test func invalidUTF8TextIsRefused() {
        #expect(code("62c328") == CBORError(.invalidUTF8, at: 0))
        #expect(code("61ff")?.code == .invalidUTF8)
        // A chunk that splits a character is refused even though the joined bytes are valid (§3.2.3).
        #expect(code("7f61c361bcff")?.code == .invalidUTF8)
        #expect(code("7f62c3bcff") == nil)
    }

    @Test func trailingBytesAreRefusedByDecodeButNotByDecodePrefix() throws {
        #expect(code("0000") == CBORError(.trailingBytes, at: 1))
        let first = try CBORDecoder().decodePrefix(hexBytes("a1616101a0"))
        #expect(first?.value == .map([CBORPair(.text("a"), .unsigned(1))]) && first?.byteCount == 4)
    }

    @Test func depthIsLimited() throws {
        let limits = CBORLimits(maxDepth: 4)
        #expect(code("81818181" + "00", limits: limits) == nil)
        #expect(code("8181818181" + "00", limits: limits) == CBORError(.depthLimitExceeded, at: 4))
        #expect(code("c1c1c1c1c100", limits: limits) == CBORError(.depthLimitExceeded, at: 4))
        #expect(code("bf61619f9f9f80ffffffff", limits: limits)?.code == .depthLimitExceeded)
        // 10,000 nested arrays: refused at the default depth (16), with no deep recursion.
        let deep = [UInt8](repeating: 0x81, count: 10_000) + [0]
        #expect(throws: CBORError(.depthLimitExceeded, at: 16)) { try CBORDecoder().decode(deep) }
    }

    @Test func itemCountIsLimited() {
        let limits = CBORLimits(maxItems: 4)
        #expect(code("83010203", limits: limits) == nil)
        #expect(code("8401020304", limits: limits) == CBORError(.itemLimitExceeded, at: 4))
        #expect(code("9f01020304ff", limits: limits)?.code == .itemLimitExceeded)
        // String chunks count too.
        #expect(code("5f41014101410141014101ff", limits: limits)?.code == .itemLimitExceeded)
    }

    /// A hostile length is refused before anything is allocated for it: lengths over the size limit are
    /// `sizeLimitExceeded`, lengths and counts over the bytes left are `truncated`.
    @Test func hostileLengthsAreRefusedWithoutAllocating() throws {
        #expect(code("5bffffffffffffffff")?.code == .sizeLimitExceeded)
        #expect(code("7bffffffffffffffff")?.code == .sizeLimitExceeded)
        #expect(code("9bffffffffffffffff")?.code == .truncated)
        #expect(code("bbffffffffffffffff")?.code == .truncated)
        #expect(code("9a7fffffff00")?.code == .truncated)
        #expect(code("5a0000ffff00")?.code == .truncated)
        #expect(code("5a00010000", limits: CBORLimits(maxBytes: 65_535))?.code == .sizeLimitExceeded)
        // Streaming: a length beyond the size limit can never complete, so it is an error, not "need more".
        #expect(throws: CBORError.self) { try CBORDecoder(limits: CBORLimits(maxBytes: 16)).decodePrefix(hexBytes("5820")) }
        #expect(try CBORDecoder(limits: CBORLimits(maxBytes: 16)).decodePrefix(hexBytes("4a01")) == nil)
        // The whole input over the size limit.
        #expect(throws: CBORError(.sizeLimitExceeded, at: 2)) { try CBORDecoder(limits: CBORLimits(maxBytes: 2)).decode(hexBytes("420102")) }
    }

    @Test func typedAccessFindsTextKeysAndSkipsTheRest() throws {
        // A zcbor-style indefinite map with keys the reader does not ask for (an integer key, a nested map).
        let value = try CBORDecoder().decode(hexBytes("bf01026372737063626164636f6666190400616ea1617801656d61746368f5ff"))
        #expect(value["off"]?.unsignedValue == 1024)
        #expect(value["match"]?.boolValue == true)
        #expect(value["rsp"]?.textValue == "bad")
        #expect(value["missing"] == nil)
        #expect(value["off"]?.textValue == nil)
        #expect(CBORValue.unsigned(1)["off"] == nil)
        #expect(CBORValue.negative(UInt64.max).integerValue == nil)
        #expect(CBORValue.negative(UInt64(Int64.max)).integerValue == Int64.min)
    }

    @Test func encoderWritesShortestHeads() {
        // §4.2.1: arguments 23, 24, 255, 256, 65535, 65536, 2³²−1, 2³² take 1, 2, 2, 3, 3, 5, 5, 9 bytes.
        let sizes = [(23, 1), (24, 2), (255, 2), (256, 3), (65535, 3), (65536, 5), (4_294_967_295, 5), (4_294_967_296, 9)]
        for (argument, size) in sizes {
            #expect(CBORValue.unsigned(UInt64(argument)).encoded.count == size)
            #expect(CBORHead.size(argument: UInt64(argument)) == size)
        }
        #expect(hexString(CBORValue.bytes(Array(repeating: 7, count: 24)).encoded.prefix(2)) == "5818")
        #expect(hexString(CBORValue.tagged(256, .null).encoded) == "d90100f6")
    }
}
