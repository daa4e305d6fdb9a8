/// What tetherd knows at run time that neither the store nor the gateway keeps: when it started and the adapter
/// it was configured with. Immutable; the gateway and the sync service are asked for their own state.
public struct DaemonState: Sendable {
    public struct Snapshot: Hashable, Sendable {
        public var startedAt: Int64
        public var adapter: String
    }

    public let snapshot: Snapshot

    public init(startedAt: Int64, adapter: String) {
        snapshot = Snapshot(startedAt: startedAt, adapter: adapter)
    }
}
