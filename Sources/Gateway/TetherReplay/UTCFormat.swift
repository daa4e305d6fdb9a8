import LinkProtocol
import TetherPrimitives

/// ISO 8601 UTC times without Foundation: civil-date arithmetic (H. Hinnant, "chrono-compatible low-level date
/// algorithms"), so output is identical on every platform and locale.
public enum UTCFormat {
    /// `2026-11-01T08:00:00.123Z` with `fractionalDigits` (0, 3, 6 or 9) digits of the second.
    public static func iso8601(_ instant: Timestamp, fractionalDigits: Int = 3) -> String {
        let nanoseconds = instant.nanoseconds
        var seconds = nanoseconds / 1_000_000_000
        var fraction = nanoseconds % 1_000_000_000
        if fraction < 0 {
            fraction += 1_000_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = CivilDate.civil(days: days)
        var text = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        if fractionalDigits > 0 {
            let digits = min(fractionalDigits, 9)
            var scaled = fraction
            for _ in 0..<(9 - digits) { scaled /= 10 }
            text += "." + pad(scaled, digits)
        }
        return text + "Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction]Z`; nil for another shape or a time a `Timestamp` cannot hold
    /// (64-bit nanoseconds since 1970 end in April 2262 and begin in 1677).
    public static func parseISO8601(_ text: String) -> Timestamp? {
        guard let (days, nanosecondOfDay) = parseISO8601Fields(text) else { return nil }
        let (dayNanoseconds, overflowed) = days.multipliedReportingOverflow(by: 86_400_000_000_000)
        guard !overflowed else { return nil }
        let (nanoseconds, overflowedAgain) = dayNanoseconds.addingReportingOverflow(nanosecondOfDay)
        return overflowedAgain ? nil : Timestamp(nanoseconds: nanoseconds)
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` as days since 1970-01-01 and nanoseconds into that day, so a caller can
    /// check the range before it converts (four-digit years fit in the day count; the nanoseconds may not).
    static func parseISO8601Fields(_ text: String) -> (days: Int64, nanosecondOfDay: Int64)? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var nanos: Int64 = 0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count - 21 <= 9, bytes.count - 21 >= 1, let fraction = number(20..<(bytes.count - 1)) else { return nil }
            nanos = fraction
            for _ in 0..<(9 - (bytes.count - 21)) { nanos *= 10 }
        } else if bytes.count != 20 {
            return nil
        }
        let days = CivilDate.days(year: year, month: month, day: day)
        return (days, (hour * 3600 + minute * 60 + second) * 1_000_000_000 + nanos)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
