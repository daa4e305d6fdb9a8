/// A durable-store stand-in for LinkPair and replays: applies persist batches the way the real store must
/// (events unique by key, later anchors re-deriving event times) and counts what it was asked to do.
public struct MemoryEventStore: Sendable {
    public struct Event: Hashable, Sendable {
        public var hit: StoredHit
        /// How many times a batch carried this key; a correct gateway may send a key again only after a failure.
        public var deliveries: Int
    }

    public private(set) var events: [EventKey: Event] = [:]
    public private(set) var anchors: [TimeAnchor] = []
    public private(set) var deviceInfo: DeviceInfo?
    public private(set) var negotiatedVersion: UInt8?
    public private(set) var battery: BatteryStatus?
    public private(set) var sleeps: [SleepNotice] = []
    public private(set) var reportedConfig: DeviceConfig?
    /// Every config version a CONFIG_DATA stored, so an acknowledged report can be checked against the store.
    public private(set) var reportedVersions: Set<UInt32> = []
    /// Keys the store refused as already present (the gateway's cache should make this rare).
    public private(set) var duplicateInserts = 0
    private var clock = DeviceClock()

    public init() {}

    public func contains(_ key: EventKey) -> Bool { events[key] != nil }

    public mutating func apply(_ batch: PersistBatch) {
        for item in batch.items {
            switch item {
            case .deviceInfo(let info, let version):
                deviceInfo = info
                negotiatedVersion = version
            case .hit(let hit):
                if events[hit.key] != nil {
                    duplicateInserts += 1
                    events[hit.key]!.deliveries += 1
                } else {
                    var hit = hit
                    hit.time = clock.estimate(boot: hit.key.bootCounter, ticks: hit.ticks) ?? hit.time
                    events[hit.key] = Event(hit: hit, deliveries: 1)
                }
            case .battery(_, let status, _):
                battery = status
            case .sleep(_, let notice, _):
                sleeps.append(notice)
            case .reportedConfig(_, let config):
                reportedConfig = config
                reportedVersions.insert(config.version)
            case .anchor(_, let anchor):
                anchors.append(anchor)
                clock.add(anchor)
                // §9.7: every event of the boot gets its time derived again from the improved clock.
                for (key, event) in events where key.bootCounter == anchor.bootCounter {
                    events[key]!.hit.time = clock.estimate(boot: key.bootCounter, ticks: event.hit.ticks)
                }
            }
        }
    }
}
