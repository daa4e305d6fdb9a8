import CBOR
import Testing

/// Every example of RFC 8949 Appendix A ("Examples of Encoded CBOR Data Items"), copied from the RFC's table: each
/// decodes to the value the RFC gives, and encodes back to the same bytes where the RFC's encoding is the preferred
/// serialization (§4.2.1; the indefinite-length examples encode to their definite form instead).
struct AppendixATests {
    struct Example: CustomTestStringConvertible, Sendable {
        let hex: String
        let value: CBORValue
        /// The encoder's output when it is not `hex` (indefinite lengths become definite).
        let reencoded: String?
        var testDescription: String { hex }
        init(_ hex: String, _ value: CBORValue, reencoded: String? = nil) {
            self.hex = hex
            self.value = value
            self.reencoded = reencoded
        }
    }

    static func u(_ value: UInt64) -> CBORValue { .unsigned(value) }
    static func t(_ value: String) -> CBORValue { .text(value) }

    static let integers: [Example] = [
        Example("00", u(0)), Example("01", u(1)), Example("0a", u(10)), Example("17", u(23)), Example("1818", u(24)),
        Example("1819", u(25)), Example("1864", u(100)), Example("1903e8", u(1000)), Example("1a000f4240", u(1_000_000)),
        Example("1b000000e8d4a51000", u(1_000_000_000_000)), Example("1bffffffffffffffff", u(UInt64.max)),
        // 18446744073709551616 and -18446744073709551617 as bignums (tags 2 and 3, §3.4.3).
        Example("c249010000000000000000", .tagged(2, .bytes([1, 0, 0, 0, 0, 0, 0, 0, 0]))),
        Example("3bffffffffffffffff", .negative(UInt64.max)),
        Example("c349010000000000000000", .tagged(3, .bytes([1, 0, 0, 0, 0, 0, 0, 0, 0]))),
        Example("20", .integer(-1)), Example("29", .integer(-10)), Example("3863", .integer(-100)), Example("3903e7", .integer(-1000)),
    ]

    static let floats: [Example] = [
        Example("f90000", .float16(bits: 0x0000)), Example("f98000", .float16(bits: 0x8000)), Example("f93c00", .float16(bits: 0x3C00)),
        Example("fb3ff199999999999a", .float64(bits: 0x3FF1_9999_9999_999A)), Example("f93e00", .float16(bits: 0x3E00)),
        Example("f97bff", .float16(bits: 0x7BFF)), Example("fa47c35000", .float32(bits: 0x47C3_5000)),
        Example("fa7f7fffff", .float32(bits: 0x7F7F_FFFF)), Example("fb7e37e43c8800759c", .float64(bits: 0x7E37_E43C_8800_759C)),
        Example("f90001", .float16(bits: 0x0001)), Example("f90400", .float16(bits: 0x0400)), Example("f9c400", .float16(bits: 0xC400)),
        Example("fbc010666666666666", .float64(bits: 0xC010_6666_6666_6666)), Example("f97c00", .float16(bits: 0x7C00)),
        Example("f97e00", .float16(bits: 0x7E00)), Example("f9fc00", .float16(bits: 0xFC00)),
        Example("fa7f800000", .float32(bits: 0x7F80_0000)), Example("fa7fc00000", .float32(bits: 0x7FC0_0000)),
        Example("faff800000", .float32(bits: 0xFF80_0000)), Example("fb7ff0000000000000", .float64(bits: 0x7FF0_0000_0000_0000)),
        Example("fb7ff8000000000000", .float64(bits: 0x7FF8_0000_0000_0000)),
        Example("fbfff0000000000000", .float64(bits: 0xFFF0_0000_0000_0000)),
    ]

    static let simpleAndTagged: [Example] = [
        Example("f4", .bool(false)), Example("f5", .bool(true)), Example("f6", .null), Example("f7", .undefined),
        Example("f0", .simple(16)), Example("f8ff", .simple(255)),
        Example("c074323031332d30332d32315432303a30343a30305a", .tagged(0, t("2013-03-21T20:04:00Z"))),
        Example("c11a514b67b0", .tagged(1, u(1_363_896_240))),
        Example("c1fb41d452d9ec200000", .tagged(1, .float64(bits: 0x41D4_52D9_EC20_0000))),
        Example("d74401020304", .tagged(23, .bytes([1, 2, 3, 4]))),
        Example("d818456449455446", .tagged(24, .bytes([0x64, 0x49, 0x45, 0x54, 0x46]))),
        Example("d82076687474703a2f2f7777772e6578616d706c652e636f6d", .tagged(32, t("http://www.example.com"))),
    ]

    static let strings: [Example] = [
        Example("40", .bytes([])), Example("4401020304", .bytes([1, 2, 3, 4])), Example("60", t("")), Example("6161", t("a")),
        Example("6449455446", t("IETF")), Example("62225c", t("\"\\")), Example("62c3bc", t("\u{00fc}")),
        Example("63e6b0b4", t("\u{6c34}")), Example("64f0908591", t("\u{10151}")),
    ]

    static let oneToTwentyFive = CBORValue.array((1...25).map { u($0) })
    static let definiteContainers: [Example] = [
        Example("80", .array([])), Example("83010203", .array([u(1), u(2), u(3)])),
        Example("8301820203820405", .array([u(1), .array([u(2), u(3)]), .array([u(4), u(5)])])),
        Example("98190102030405060708090a0b0c0d0e0f101112131415161718181819", oneToTwentyFive),
        Example("a0", .map([])), Example("a201020304", .map([CBORPair(u(1), u(2)), CBORPair(u(3), u(4))])),
        Example("a26161016162820203", .map([CBORPair(t("a"), u(1)), CBORPair(t("b"), .array([u(2), u(3)]))])),
        Example("826161a161626163", .array([t("a"), .map([CBORPair(t("b"), t("c"))])])),
        Example(
            "a56161614161626142616361436164614461656145",
            .map(["a", "b", "c", "d", "e"].map { CBORPair(t($0), t($0.uppercased())) })),
    ]

    static let nested = CBORValue.array([u(1), .array([u(2), u(3)]), .array([u(4), u(5)])])
    static let indefinite: [Example] = [
        Example("5f42010243030405ff", .bytes([1, 2, 3, 4, 5]), reencoded: "450102030405"),
        Example("7f657374726561646d696e67ff", t("streaming"), reencoded: "6973747265616d696e67"),
        Example("9fff", .array([]), reencoded: "80"),
        Example("9f018202039f0405ffff", nested, reencoded: "8301820203820405"),
        Example("9f01820203820405ff", nested, reencoded: "8301820203820405"),
        Example("83018202039f0405ff", nested, reencoded: "8301820203820405"),
        Example("83019f0203ff820405", nested, reencoded: "8301820203820405"),
        Example("9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff", oneToTwentyFive,
                reencoded: "98190102030405060708090a0b0c0d0e0f101112131415161718181819"),
        Example("bf61610161629f0203ffff", .map([CBORPair(t("a"), u(1)), CBORPair(t("b"), .array([u(2), u(3)]))]),
                reencoded: "a26161016162820203"),
        Example("826161bf61626163ff", .array([t("a"), .map([CBORPair(t("b"), t("c"))])]), reencoded: "826161a161626163"),
        Example("bf6346756ef563416d7421ff", .map([CBORPair(t("Fun"), .bool(true)), CBORPair(t("Amt"), .integer(-2))]),
                reencoded: "a26346756ef563416d7421"),
    ]

    static let all = integers + floats + simpleAndTagged + strings + definiteContainers + indefinite

    @Test(arguments: all)
    func decodesAndReencodes(_ example: Example) throws {
        let bytes = hexBytes(example.hex)
        let value = try CBORDecoder().decode(bytes)
        #expect(value == example.value)
        #expect(hexString(value.encoded) == (example.reencoded ?? example.hex))
        // The streaming form agrees and consumes the whole item, even with another item after it.
        let prefixed = try CBORDecoder().decodePrefix(bytes + [0x00])
        #expect(prefixed?.value == example.value && prefixed?.byteCount == bytes.count)
    }

    /// RFC 8949 §3 requires a decoder to refuse every incomplete item: each proper prefix of every example.
    @Test(arguments: all)
    func everyTruncationIsRefused(_ example: Example) throws {
        let bytes = hexBytes(example.hex)
        for length in 0..<bytes.count {
            let prefix = Array(bytes[..<length])
            #expect(throws: CBORError.self, "prefix \(length)") { try CBORDecoder().decode(prefix) }
            do {
                _ = try CBORDecoder().decode(prefix)
            } catch {
                #expect(error.code == .truncated, "prefix \(length): \(error)")
            }
            #expect(try CBORDecoder().decodePrefix(prefix) == nil, "prefix \(length) is 'need more bytes'")
        }
    }

    /// The float values of Appendix A, built with `CBORValue.float`, come out in their preferred (first-listed,
    /// shortest exact) encoding (§4.2.1; NaN as 0xf97e00, §4.2.2).
    @Test func floatsChooseThePreferredWidth() {
        let preferred: [(Double, String)] = [
            (0.0, "f90000"), (-0.0, "f98000"), (1.0, "f93c00"), (1.1, "fb3ff199999999999a"), (1.5, "f93e00"),
            (65504.0, "f97bff"), (100_000.0, "fa47c35000"), (3.4028234663852886e+38, "fa7f7fffff"),
            (1.0e+300, "fb7e37e43c8800759c"), (5.960464477539063e-8, "f90001"), (0.00006103515625, "f90400"),
            (-4.0, "f9c400"), (-4.1, "fbc010666666666666"), (.infinity, "f97c00"), (.nan, "f97e00"),
            (-.infinity, "f9fc00"),
        ]
        for (value, hex) in preferred {
            #expect(hexString(CBORValue.float(value).encoded) == hex, "\(value)")
        }
        // And every half decodes to the right Double (RFC 8949 Appendix D's arithmetic).
        #expect(CBORValue.float16(bits: 0x7BFF).doubleValue == 65504.0)
        #expect(CBORValue.float16(bits: 0x0001).doubleValue == 5.960464477539063e-8)
        #expect(CBORValue.float16(bits: 0xC400).doubleValue == -4.0)
        #expect(CBORValue.float16(bits: 0x7E00).doubleValue?.isNaN == true)
    }
}

func hexBytes(_ hex: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        bytes.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

func hexString(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}
