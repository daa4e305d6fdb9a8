import SyncContract

/// Which samples one export holds (`GET /v1/health/export`, docs/specs/sync-api.yaml "Health export"): the
/// undeleted samples with `since ≤ effective_at < until`, by effective time then uid, at most `limit` of them. When
/// more remain, `next` names the last one taken; the following page starts strictly after it (`since` = its
/// effective time, `after` = its uid), so that samples sharing an instant are neither repeated nor skipped.
public struct HealthExportQuery: Hashable, Sendable {
    public static let maximumLimit = 1000

    public var since: Int64?
    public var until: Int64?
    /// With `since`: start after the sample (since, after) rather than at `since`.
    public var after: String?
    public var limit: Int

    public init(since: Int64? = nil, until: Int64? = nil, after: String? = nil, limit: Int = maximumLimit) {
        self.since = since
        self.until = until
        self.after = after
        self.limit = limit
    }

    /// `rows` in the store's order (effective time, then uid) to this page's rows and, when more remain, where the
    /// next page starts.
    public func page(_ rows: [HealthSampleRow]) -> (rows: [HealthSampleRow], next: (since: Int64, after: String)?) {
        var taken: [HealthSampleRow] = []
        for row in rows where row.deletedAt == nil && includes(row.sample) {
            if taken.count == limit {
                let last = taken[taken.count - 1].sample
                return (taken, (last.effectiveAt, last.uid.lowercased()))
            }
            taken.append(row)
        }
        return (taken, nil)
    }

    private func includes(_ sample: HealthSampleUpload) -> Bool {
        if let until, sample.effectiveAt >= until { return false }
        guard let since else { return true }
        if let after { return sample.effectiveAt > since || (sample.effectiveAt == since && sample.uid.lowercased() > after) }
        return sample.effectiveAt >= since
    }
}
