import BlueZ
import ConnectionSupervisor
import DBus
import HealthProfiles
import LinkProtocol

/// The gateway's tunables. The defaults suit a Raspberry Pi with one adapter and a handful of devices.
public struct GatewayConfiguration: Sendable {
    /// How notifications are subscribed.
    public enum NotifyPreference: Hashable, Sendable {
        /// AcquireNotify first, StartNotify when refused (remembered per device; link protocol §2.2).
        case acquireFirst
        /// AcquireNotify only (tetherd's `notify_method = "acquire-notify"`): a refusal fails the link set-up with
        /// an error naming it (the device's `lastError`), the link is disconnected and the supervisor reconnects
        /// it under its rules; StartNotify is never called.
        case acquireOnly
        /// StartNotify only (Value PropertiesChanged over D-Bus, read by the session's `DBusWireConnection`).
        case startNotifyOnly
    }

    /// The BlueZ adapter the devices are reached through.
    public var adapter: DBusObjectPath = "/org/bluez/hci0"
    /// Slot budget, backoff, reconnect rate (the supervisor's rules).
    public var supervisor = SupervisorConfiguration()
    /// The link session's window and timeouts.
    public var link = LinkSessionConfiguration()
    /// Bound on one `Device1.Connect` (BlueZ's own can hang on the 5.66 race).
    public var connectTimeout: Duration = .seconds(30)
    /// Bound on the link set-up after Connect: services resolved, Tether's service found, TX subscribed.
    public var linkSetupTimeout: Duration = .seconds(15)
    public var notifyPreference = NotifyPreference.acquireFirst
    /// Graceful shutdown: how long to wait for pending commits (and their ACKs) and then for the disconnects.
    public var shutdownTimeout: Duration = .seconds(10)
    /// `changes()` yields a device at most once per this interval (control API: at most 4 per second).
    public var changeInterval: Duration = .milliseconds(250)
    /// Pairing: how long the whole `pair` may take, the user's answers included.
    public var pairingTimeout: Duration = .seconds(90)
    /// Where the gateway's Agent1 is exported.
    public var agentPath: DBusObjectPath = "/io/tether/agent"
    /// Where standard health devices' values go (the health lanes). Nil: health devices are unsupported, recorded
    /// and let go, as any device the gateway cannot serve.
    public var health: (any HealthValueSink)?
    /// When the gateway writes its time to a health device's clock (`TimeWritePolicy`, `TimeWriteMoment`; tetherd's
    /// `[health] write_device_time`). By default only a clock that is not set: its readings are timed by receipt
    /// until then, and writing it changes the meaning of no stamp.
    public var healthTimeWrite: TimeWritePolicy.Mode = .whenClockNotSet
    /// Whose stored records the cold lane deletes from the device once the backend acknowledged them (tetherd's
    /// `[health] delete_acknowledged_records`; docs/design/health.md, "Deleting acknowledged records"). None by
    /// default: a device's memory is the person's copy until someone decides otherwise for that device.
    public var healthRecordDeletion = HealthDevicePolicy.off
    /// Whose memory the cold lane checks for records that vanished without the gateway asking (tetherd's
    /// `[health] audit_vanished_records`; RecordTransfer rule 8). None by default: a vanished record becomes a
    /// deletion on the backend.
    public var healthVanishedRecordAudit = HealthDevicePolicy.off
    /// Multi-user health devices (User Data Service): the users to consent to on every connection, by device address
    /// in upper case (tetherd's `[health] consent_codes_file`). A device with no entry gets no Consent written.
    public var healthUserConsents: [String: [UserConsentProcedure.Credential]] = [:]
    /// Called for every write and commit outcome, in order per device (tests, debugging); nil in production.
    public var trace: (@Sendable (GatewayTrace) -> Void)?

    public init() {}
}
