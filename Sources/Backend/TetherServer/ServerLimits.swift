import SyncContract

/// What one request may carry. Exceeding a limit is the client's fault and says so: 413 `request-too-large` with
/// `max_bytes`, 400 `batch-too-long` with `max_commands`, 400 `invalid-limit` for a page size out of range.
public struct ServerLimits: Hashable, Sendable {
    public var maximumRequestBytes = SyncAPI.Defaults.maximumRequestBytes
    public var maximumCommandsPerPush = SyncAPI.Defaults.maximumCommandsPerPush
    public var defaultPageLimit = SyncAPI.Defaults.pageLimit
    public var maximumPageLimit = SyncAPI.Defaults.maximumPageLimit
    /// Most samples in one `POST /v1/health/samples` (400 `batch-too-long` above it, with `max_commands`).
    public var maximumHealthSamplesPerRequest = HealthUpload.maximumSamplesPerRequest
    /// Most tombstones in one `POST /v1/health/deletions`.
    public var maximumHealthDeletionsPerRequest = HealthUpload.maximumDeletionsPerRequest

    public init() {}
}
