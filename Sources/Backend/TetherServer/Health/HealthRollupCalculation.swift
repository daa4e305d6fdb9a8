import Crypto
import SyncContract

/// What a rollup reads of one undeleted sample under its key (the store filters tombstoned ones out).
public struct HealthProjectionInput: Hashable, Sendable {
    public var uid: String
    public var valueStatus: String
    /// The canonical value, a plain decimal numeral; `nil` unless `valueStatus` is `number`.
    public var value: String?
    public var unit: String
    public var effectiveAt: Int64

    public init(uid: String, valueStatus: String, value: String?, unit: String, effectiveAt: Int64) {
        self.uid = uid
        self.valueStatus = valueStatus
        self.value = value
        self.unit = unit
        self.effectiveAt = effectiveAt
    }
}

/// A key's rollup from its samples (docs/specs/sync-api.yaml, "Health projections"): computed here, in one place,
/// for both backends, so that SQLite and PostgreSQL answer the same numerals. The store only selects the key's
/// undeleted rows (an indexed range on `(tenant, device_uid, metric_code, effective_at)`); no SQL arithmetic touches a
/// value, since neither SQLite's REAL nor a text comparison orders or sums decimal numerals exactly.
enum HealthRollupCalculation {
    static func rollup(_ key: HealthProjectionKey, _ inputs: [HealthProjectionInput], computedAt: Int64) -> HealthRollup {
        // Latest first by effective time, then uid: `last` is the first numeric one, and its unit is the figures'.
        let ordered = inputs.sorted { ($0.effectiveAt, $0.uid) > ($1.effectiveAt, $1.uid) }
        var numeric: [(input: HealthProjectionInput, value: ExactDecimal)] = []
        var specialCount = 0
        for input in ordered {
            // IEEE 11073-20601 Annex F.8: NaN, NRes, ±INFINITY and reserved values are not numbers; counted apart.
            guard input.valueStatus == "number", let text = input.value, let value = ExactDecimal(numeral: text) else {
                specialCount += 1
                continue
            }
            numeric.append((input, value))
        }
        let revision = Self.revision(of: inputs)
        guard let latest = numeric.first else {
            return HealthRollup(
                key: key, count: 0, specialCount: specialCount, otherUnitCount: 0, unit: nil, min: nil, max: nil, sum: nil, mean: nil,
                last: nil, revision: revision, computedAt: computedAt)
        }
        let unit = latest.input.unit
        let sameUnit = numeric.filter { $0.input.unit == unit }
        // Ties in value keep the earliest sample's numeral (by effective time, then uid), so `80.5` and `80.50` give
        // one answer whatever order the rows came in.
        let chronological = Array(sameUnit.reversed())
        var minimum = chronological[0], maximum = chronological[0]
        var sum = ExactDecimal.zero
        for entry in chronological {
            if ExactDecimal.compare(entry.value, minimum.value) < 0 { minimum = entry }
            if ExactDecimal.compare(entry.value, maximum.value) > 0 { maximum = entry }
            sum = sum + entry.value
        }
        let mean = sum.divided(by: sameUnit.count, fractionDigits: HealthProjection.meanFractionDigits)
        return HealthRollup(
            key: key, count: sameUnit.count, specialCount: specialCount, otherUnitCount: numeric.count - sameUnit.count, unit: unit,
            min: minimum.input.value, max: maximum.input.value, sum: sum.numeral, mean: mean.numeral,
            last: .init(value: latest.input.value ?? "", effectiveAt: latest.input.effectiveAt), revision: revision, computedAt: computedAt)
    }

    /// SHA-256 over the sorted lowercase uids, one per line, first 16 bytes in hex: the same samples give the same
    /// revision on either backend, any other set (a late sample, a deletion) another.
    static func revision(of inputs: [HealthProjectionInput]) -> String {
        let text = inputs.map { $0.uid.lowercased() }.sorted().map { $0 + "\n" }.joined()
        return SHA256.hash(data: Array(text.utf8)).prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}
