import Foundation
import TetherPrimitives

/// Server-computed daily rollups of health samples (issue 15; docs/specs/sync-api.yaml, "Health projections"). The
/// gateway asks for the keys its uploads touched (its dirty keys) and keeps the answers with their freshness; the
/// server computes them from its samples, so what a gateway shows is what the backend holds, deletions included.
public enum HealthProjection {
    public static let path = "/v1/health/projections"
    /// One request names at most this many keys: a day of uploads from a busy gateway touches a few dozen.
    public static let maximumKeysPerRequest = 500
    /// The mean's fraction digits, fixed so that both backends and every client print the same numeral. Four is one
    /// more than the finest resolution any supported profile reports (a weight scale's 0.005 kg, WSS v1.0 §3.2.1),
    /// so a mean of such values is rounded below the inputs' own precision, never at it.
    public static let meanFractionDigits = 4
}

/// What one rollup covers: one device's samples of one metric for one user on one UTC day. `deviceUid` is the
/// sample's `device.uid` as uploaded (the gateway's peripheral uid); `userIndex` is `nil` for samples without one
/// (the user index is part of the key, so two users of one scale never share a rollup).
public struct HealthProjectionKey: Codable, Hashable, Sendable, Comparable {
    public var deviceUid: String
    public var userIndex: Int?
    /// IEEE 11073-10101 MDC code, as in `HealthSampleUpload.metricCode`.
    public var metricCode: Int
    /// The UTC day, `YYYY-MM-DD` (RFC 3339 full-date).
    public var day: String

    public init(deviceUid: String, userIndex: Int?, metricCode: Int, day: String) {
        self.deviceUid = deviceUid
        self.userIndex = userIndex
        self.metricCode = metricCode
        self.day = day
    }

    /// The key a sample falls under.
    public init(sample: HealthSampleUpload) {
        self.init(
            deviceUid: sample.device.uid, userIndex: sample.userIndex, metricCode: sample.metricCode,
            day: HealthProjectionDay(containing: sample.effectiveAt).text)
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.deviceUid, a.userIndex ?? -1, a.metricCode, a.day) < (b.deviceUid, b.userIndex ?? -1, b.metricCode, b.day)
    }

    enum CodingKeys: String, CodingKey {
        case day
        case deviceUid = "device_uid"
        case userIndex = "user_index"
        case metricCode = "metric_code"
    }
}

/// A UTC day as days since 1970-01-01, from and to RFC 3339's `full-date` (`YYYY-MM-DD`, years 0001-9999, the
/// proleptic Gregorian calendar). Pure arithmetic (H. Hinnant's days-from-civil), no calendar object, no time zone.
public struct HealthProjectionDay: Hashable, Sendable, Comparable {
    public static let nanosecondsPerDay: Int64 = 86_400_000_000_000

    /// Days since 1970-01-01 (negative before it).
    public var daysSinceEpoch: Int64

    public init(daysSinceEpoch: Int64) { self.daysSinceEpoch = daysSinceEpoch }

    /// The day holding an instant (nanoseconds since the Unix epoch); floor division, so instants before 1970 fall
    /// on the day they belong to.
    public init(containing nanoseconds: Int64) {
        let (quotient, remainder) = nanoseconds.quotientAndRemainder(dividingBy: Self.nanosecondsPerDay)
        daysSinceEpoch = remainder < 0 ? quotient - 1 : quotient
    }

    /// `nil` unless `text` is exactly `YYYY-MM-DD` with ASCII digits, a year from 0001, a month 01-12 and a day that
    /// month has (RFC 3339 §5.6 `full-date` with §5.7's day limits).
    public init?(text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        guard year >= 1, (1...12).contains(month), day >= 1, Int64(day) <= CivilDate.daysIn(month: Int64(month), year: Int64(year)) else { return nil }
        daysSinceEpoch = CivilDate.days(year: Int64(year), month: Int64(month), day: Int64(day))
    }

    /// `YYYY-MM-DD`; years outside 0001-9999 (instants no sample has) are printed as they fall, for logs only.
    public var text: String {
        let (year, month, day) = CivilDate.civil(days: daysSinceEpoch)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value.magnitude)
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// The instants of the day, `[start, end)` in nanoseconds since the Unix epoch, clamped to what an Int64 holds
    /// (a day of year 0001 starts before the earliest Int64 instant; its samples cannot exist, the range is empty).
    public var instants: Range<Int64> {
        func clamp(_ days: Int64) -> Int64 {
            let (product, overflow) = days.multipliedReportingOverflow(by: Self.nanosecondsPerDay)
            if overflow { return days < 0 ? Int64.min : Int64.max }
            return product
        }
        return clamp(daysSinceEpoch)..<clamp(daysSinceEpoch + 1)
    }

    public static func < (a: Self, b: Self) -> Bool { a.daysSinceEpoch < b.daysSinceEpoch }
}

/// One key's rollup (`HealthRollup` in the spec). Over the key's undeleted samples whose value is a number:
/// `count`, `min`, `max`, `sum` (exact) and `mean` (`sum / count` rounded half to even to
/// `HealthProjection.meanFractionDigits` digits), and `last`, the latest of them by effective time (then uid).
/// Samples with a special value (NaN, NRes, ±infinity, reserved: IEEE 11073-20601 Annex F.8) are counted in
/// `specialCount` and take no part in the figures. Values are plain decimal numerals, exact as uploaded.
public struct HealthRollup: Codable, Hashable, Sendable {
    public struct Last: Codable, Hashable, Sendable {
        public var value: String
        public var effectiveAt: Int64

        public init(value: String, effectiveAt: Int64) {
            self.value = value
            self.effectiveAt = effectiveAt
        }

        enum CodingKeys: String, CodingKey {
            case value
            case effectiveAt = "effective_at"
        }
    }

    public var key: HealthProjectionKey
    public var count: Int
    public var specialCount: Int
    /// Numeric samples in a canonical unit other than `unit` (the canonical unit is one per metric, so this is 0
    /// unless an uploader broke that rule); they take no part in the figures, which never mix units.
    public var otherUnitCount: Int
    /// The canonical UCUM unit of the figures; `nil` when `count` is 0.
    public var unit: String?
    public var min: String?
    public var max: String?
    public var sum: String?
    public var mean: String?
    public var last: Last?
    /// Changes exactly when the set of undeleted samples under the key changes (a digest of their uids): two answers
    /// with the same revision describe the same samples.
    public var revision: String
    /// The server's instant of computing, nanoseconds since the Unix epoch.
    public var computedAt: Int64

    public init(
        key: HealthProjectionKey, count: Int, specialCount: Int, otherUnitCount: Int, unit: String?, min: String?, max: String?,
        sum: String?, mean: String?, last: Last?, revision: String, computedAt: Int64
    ) {
        self.key = key
        self.count = count
        self.specialCount = specialCount
        self.otherUnitCount = otherUnitCount
        self.unit = unit
        self.min = min
        self.max = max
        self.sum = sum
        self.mean = mean
        self.last = last
        self.revision = revision
        self.computedAt = computedAt
    }

    enum CodingKeys: String, CodingKey {
        case key, count, unit, min, max, sum, mean, last, revision
        case specialCount = "special_count"
        case otherUnitCount = "other_unit_count"
        case computedAt = "computed_at"
    }
}

/// `POST /v1/health/projections`.
public struct HealthProjectionsRequest: Codable, Hashable, Sendable {
    public var keys: [HealthProjectionKey]

    public init(keys: [HealthProjectionKey]) { self.keys = keys }
}

/// The answer: one rollup per key, in request order (a key with no samples has `count` 0).
public struct HealthProjectionsResponse: Codable, Hashable, Sendable {
    public var projections: [HealthRollup]

    public init(projections: [HealthRollup]) { self.projections = projections }
}
