import Foundation

/// Everything tetherd reads from `/etc/tether/tether.toml` (`deploy/tether.toml` documents every key).
///
/// Meaning only: the TOML shape lives in `ConfigurationSchema`, the reading in `ConfigurationReader`. Every field
/// has the default the annotated example shows, so an empty file is a valid configuration.
public struct DaemonConfiguration: Hashable, Sendable {
    public static let defaultPath = "/etc/tether/tether.toml"

    public struct Gateway: Hashable, Sendable {
        /// The SQLite database (WAL files sit next to it).
        public var database = "/var/lib/tether/gateway.sqlite"
        /// Where tetherd keeps its other state; systemd's StateDirectory= creates it.
        public var stateDirectory = "/var/lib/tether"
    }

    public enum NotifyMethod: String, Hashable, Sendable, CaseIterable {
        /// AcquireNotify when BlueZ offers it, StartNotify for a device whose AcquireNotify is refused.
        case auto
        /// AcquireNotify only: a refusal is reported as the device's error and retried, never StartNotify.
        case acquireNotify = "acquire-notify"
        /// StartNotify only.
        case startNotify = "start-notify"
    }

    public struct Bluetooth: Hashable, Sendable {
        /// Where BlueZ (org.bluez) is: the system bus, or a private bus in tests and the demo.
        public var bus = Bus.system
        public var adapter = "hci0"
        /// Devices connected at once (the supervisor's slot budget).
        public var maximumConnections = 5
        public var backoffInitial: Duration = .seconds(2)
        public var backoffMaximum: Duration = .seconds(300)
        public var notifyMethod = NotifyMethod.auto
    }

    /// Standard Bluetooth health devices (issue 14).
    public struct Health: Hashable, Sendable {
        /// Serve them: subscribe their measurements and store every reading (the hot lane). Off: they are recorded
        /// as unsupported and let go, never connected with their readings dropped.
        public var enabled = true
        /// Multi-user devices (User Data Service): the file of each user's consent code (`ConsentCodes`; a secrets
        /// file, 0600). Unset: no consent is written, and such a device sends only the readings of no known user.
        public var consentCodesFile: String?
        /// When tetherd writes its time (UTC) to a health device's clock (Current Time 0x2A2B, or a writable Date
        /// Time 0x2A08). Default `when-not-set`: a clock that is not set stamps nothing usable, so writing it loses
        /// nothing; a drifted clock is corrected by the reading of it on each connection instead, and writing it is
        /// opt-in (another collector, the person's phone app, may own it; and a write waits for the cold lane).
        public var writeDeviceTime = DeviceTimeWrite.whenNotSet
        /// `when-drifted`: how far the device's clock may be from the gateway's before it is written.
        public var deviceTimeTolerance: Duration = .seconds(120)
        /// The devices (identity addresses, upper case) whose stored records tetherd deletes from the device once
        /// the backend has acknowledged them (RACP "Delete Stored Records ≤ N"; docs/design/health.md, "Deleting
        /// acknowledged records"). Empty by default: no device's memory is touched. A list, never "all": a meter
        /// paired later is not opted in by a policy written before it.
        public var deleteAcknowledgedRecords: [String] = []
        /// The devices (identity addresses, upper case) whose memory tetherd checks, once per connection, for
        /// records that vanished without the gateway asking (RACP "Report Number of Stored Records" within ranges;
        /// docs/design/health.md, "Records that vanish from a device"): their samples are tombstoned
        /// `vanished-from-device` and the backend hears of it. Empty by default.
        public var auditVanishedRecords: [String] = []
    }

    /// `[health] write_device_time` (TimeWritePolicy.Mode; docs/design/health.md, "The time-write rule").
    public enum DeviceTimeWrite: String, Hashable, Sendable, CaseIterable {
        /// Never, not even a clock that is not set.
        case never
        /// Only a clock the device reports not set.
        case whenNotSet = "when-not-set"
        /// That, and a clock further than `device_time_tolerance` from the gateway's.
        case whenDrifted = "when-drifted"
        /// On every connection (still after the cold lane has taken the stored records).
        case always
    }

    public struct Sync: Hashable, Sendable {
        /// No URL: sync is off and events stay in the outbox until one is configured.
        public var serverURL: URL?
        /// The gateway's bearer token; the file must be readable by its owner only (0600).
        public var tokenFile = "/etc/tether/sync.token"
        /// Extra CA certificates (PEM) for a backend with a private CA.
        public var caFile: String?
        public var interval: Duration = .seconds(60)
    }

    public enum Bus: Hashable, Sendable {
        case system
        case address(String)
    }

    public struct Control: Hashable, Sendable {
        public var bus = Bus.system
    }

    /// Firmware updates tetherd makes (issue 16; docs/design/ota.md).
    public struct Firmware: Hashable, Sendable {
        /// The directory of public keys an image must be signed by (PEM or DER, one per file). Read at each update,
        /// so a key added or revoked counts from the next one.
        public var trustedKeys = "/etc/tether/firmware-keys"
    }

    public struct Metrics: Hashable, Sendable {
        public var enabled = true
        /// Loopback only: the endpoint has no authentication.
        public var listen = ListenAddress(host: "127.0.0.1", port: 9464)
    }

    public enum LogLevel: String, Hashable, Sendable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
    }

    public struct Log: Hashable, Sendable {
        public var level = LogLevel.info
    }

    public struct Storage: Hashable, Sendable {
        /// Pages in use (not the file size); nil: no cap.
        public var maximumDatabaseBytes: Int64? = nil
        public var minimumFreeDiskBytes: Int64 = 64 << 20
        /// Synced events and telemetry older than this are pruned.
        public var retention: Duration = .seconds(30 * 86_400)
        public var retentionInterval: Duration = .seconds(3600)
        public var checkpointInterval: Duration = .milliseconds(250)
    }

    public var gateway = Gateway()
    public var bluetooth = Bluetooth()
    public var health = Health()
    public var sync = Sync()
    public var firmware = Firmware()
    public var control = Control()
    public var metrics = Metrics()
    public var log = Log()
    public var storage = Storage()

    public init() {}
}

/// A `host:port` to listen on; IPv6 hosts in brackets (`[::1]:9464`).
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
