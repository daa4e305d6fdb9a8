import Synchronization

/// What tetherd knows at run time that is not in the database: when it started, whether BlueZ is there, which
/// devices are connected and how, the last sync. The device-session service and the sync engine write it; the
/// control API and the metrics read it. All reads are snapshots.
public final class DaemonState: Sendable {
    public struct LiveDevice: Hashable, Sendable {
        public var serial: String?
        public var address: String
        public var name: String?
        /// docs/control-api.md: idle, connecting, connected, backoff, disconnecting, removing.
        public var state: String = "idle"
        public var attempts: UInt32 = 0
        public var lastError: String?
        public var rssi: Int16?
        public var batteryPercent: UInt8?
        public var framesReceived: UInt64 = 0
        public var framesSent: UInt64 = 0
        public var notifyMethod: String?
        public var mtu: UInt16?

        public init(address: String) { self.address = address }
    }

    public struct SyncSummary: Hashable, Sendable {
        /// ok, failed or never (docs/control-api.md, Status).
        public var result = "never"
        public var finishedAt: Int64?
        public var error: String?
        public var clockSkewNanoseconds: Int64?
        public init() {}
    }

    public struct Snapshot: Hashable, Sendable {
        public var startedAt: Int64
        public var bluezAvailable = false
        public var adapter: String
        public var scanning = false
        public var devices: [String: LiveDevice] = [:]  // by address
        public var sync = SyncSummary()
        public var controlReady = false
    }

    private let state: Mutex<Snapshot>

    public init(startedAt: Int64, adapter: String) {
        state = Mutex(Snapshot(startedAt: startedAt, adapter: adapter))
    }

    public var snapshot: Snapshot { state.withLock { $0 } }

    public func update<T>(_ body: (inout Snapshot) -> T) -> T {
        state.withLock { body(&$0) }
    }
}
