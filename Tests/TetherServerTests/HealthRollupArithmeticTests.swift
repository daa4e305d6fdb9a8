import SyncContract
import Testing
@testable import TetherServer

/// The rollup's exact decimal arithmetic and its UTC days. Expected means are Python's `decimal` module
/// (`(Decimal(sum) / count).quantize(Decimal("0.0001"), ROUND_HALF_EVEN)` at 200 digits of precision), an
/// implementation independent of this one; expected days are RFC 3339 dates checked against `date -u -d @seconds`.
@Suite("health rollup arithmetic: exact decimals, half-even means, UTC days")
struct HealthRollupArithmeticTests {
    @Test(
        "the mean rounds half to even at 4 digits, exactly",
        arguments: [
            ("331.75", 3, "110.5833"), ("0.00005", 1, "0.0000"), ("0.00015", 1, "0.0002"), ("-0.00015", 1, "-0.0002"),
            ("2", 3, "0.6667"), ("1", 3, "0.3333"), ("0.000250", 2, "0.0001"), ("-7", 2, "-3.5000"), ("0.00025", 1, "0.0002"),
            ("0.000349999", 1, "0.0003"), ("1.00005", 1, "1.0000"), ("10", 4, "2.5000"), ("0.6", 4, "0.1500"),
            ("1234567890123456789012345.8", 3, "411522630041152263004115.2667"), ("0.00035", 1, "0.0004"), ("0.000450001", 1, "0.0005"),
        ])
    func mean(sum: String, count: Int, expected: String) throws {
        let value = try #require(ExactDecimal(numeral: sum))
        #expect(value.divided(by: count, fractionDigits: 4).numeral == expected)
    }

    @Test("a negative mean that rounds to zero has no sign (Python prints -0.0000; both are zero)")
    func negativeZero() throws {
        #expect(try #require(ExactDecimal(numeral: "-0.00005")).divided(by: 1, fractionDigits: 4).numeral == "0.0000")
    }

    @Test("sums are exact at the larger scale, across signs")
    func sums() throws {
        func sum(_ values: String...) throws -> String {
            try values.reduce(ExactDecimal.zero) { $0 + (try #require(ExactDecimal(numeral: $1))) }.numeral
        }
        #expect(try sum("0.1", "0.2") == "0.3")
        #expect(try sum("120.50", "1") == "121.50")
        #expect(try sum("-5", "3.25") == "-1.75")
        #expect(try sum("3.25", "-5") == "-1.75")
        #expect(try sum("5", "-5.00") == "0.00")
        #expect(try sum("99999999999999999999", "1") == "100000000000000000000")
        #expect(try sum("-0.001", "-0.009") == "-0.010")
    }

    @Test("order is by value, whatever the numeral's scale or sign")
    func order() throws {
        func compare(_ a: String, _ b: String) throws -> Int {
            ExactDecimal.compare(try #require(ExactDecimal(numeral: a)), try #require(ExactDecimal(numeral: b)))
        }
        #expect(try compare("80.5", "80.50") == 0)
        #expect(try compare("9", "10") == -1)
        #expect(try compare("-9", "-10") == 1)
        #expect(try compare("-0.1", "0") == -1)
        #expect(try compare("0.10", "0.09") == 1)
        #expect(try compare("007", "7") == 0)
    }

    @Test("numerals other than -?digits[.digits] are refused", arguments: ["", "-", ".5", "5.", "1e3", "+1", "1.2.3", "١٢", " 1"])
    func refused(numeral: String) {
        #expect(ExactDecimal(numeral: numeral) == nil)
    }

    @Test("UTC days: text, days since 1970-01-01 and instants agree")
    func days() throws {
        #expect(HealthProjectionDay(text: "1970-01-01")?.daysSinceEpoch == 0)
        #expect(HealthProjectionDay(text: "2026-11-01")?.daysSinceEpoch == 20_758)  // date -u -d @1793491200
        #expect(HealthProjectionDay(text: "2000-03-01")?.daysSinceEpoch == 11_017)  // after a leap day of a year divisible by 400
        #expect(HealthProjectionDay(containing: -1).text == "1969-12-31", "floor, not truncation")
        #expect(HealthProjectionDay(containing: 1_793_491_199_999_999_999).text == "2026-10-31")
        #expect(HealthProjectionDay(containing: 1_793_491_200_000_000_000).text == "2026-11-01")
        let day = try #require(HealthProjectionDay(text: "2026-11-01"))
        #expect(day.instants == 1_793_491_200_000_000_000..<1_793_577_600_000_000_000)
        // Year 0001 and 9999 are valid dates beyond Int64's nanoseconds: empty, clamped ranges, no overflow trap.
        #expect(try #require(HealthProjectionDay(text: "0001-01-01")).instants == Int64.min..<Int64.min)
        #expect(try #require(HealthProjectionDay(text: "9999-12-31")).instants == Int64.max..<Int64.max)
        #expect(HealthProjectionDay(text: "9999-12-31")?.text == "9999-12-31")
        #expect(HealthProjectionDay(text: "0001-01-01")?.text == "0001-01-01")
        for bad in ["2023-02-29", "1900-02-29", "2026-04-31", "2026-13-01", "2026-00-10", "2026-01-00", "0000-01-01", "2026-1-01", "2026-01-01T00", "２０２６-01-01"] {
            #expect(HealthProjectionDay(text: bad) == nil, "\(bad)")
        }
        #expect(HealthProjectionDay(text: "2024-02-29") != nil)
        #expect(HealthProjectionDay(text: "2000-02-29") != nil)
    }
}
