import SyncContract

/// One page of `GET /v1/health/export` (and `tether-server health export`): the tenant's undeleted samples in the
/// order (effective time, uid), uids compared byte by byte, from a position, before an end, at most `limit`. The
/// store answers it with the bounds in its query (`ServerStore.healthExportPage`), so a page costs an index range,
/// not a read of the tenant's samples.
public struct HealthExportQuery: Hashable, Sendable {
    public static let maximumLimit = 1000

    /// Only samples whose effective time is at or after this instant.
    public var since: Int64?
    /// Only samples whose effective time is before this instant.
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

    /// Rows a store asks for: one more than the page holds, which says whether another page follows.
    var rowsToFetch: Int { limit == Int.max ? Int.max : limit + 1 }
}

/// A page and, when more samples follow it, where the next one starts.
public struct HealthExportPage: Sendable {
    /// Where a page starts: after the sample at (since, after).
    public struct Position: Hashable, Sendable {
        public var since: Int64
        public var after: String

        public init(since: Int64, after: String) {
            self.since = since
            self.after = after
        }
    }

    public var rows: [HealthSampleRow]
    public var next: Position?

    /// `fetched`: up to `query.rowsToFetch` rows in the page's order.
    init(fetched: [HealthSampleRow], query: HealthExportQuery) {
        guard fetched.count > query.limit, let last = fetched.prefix(query.limit).last else {
            rows = fetched
            next = nil
            return
        }
        rows = Array(fetched.prefix(query.limit))
        next = Position(since: last.sample.effectiveAt, after: last.sample.uid)
    }
}
