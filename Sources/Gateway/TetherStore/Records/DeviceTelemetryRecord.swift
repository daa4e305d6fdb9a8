import GRDB
import LinkProtocol

/// A row of `deviceTelemetry`: a BATTERY_STATUS (§7.6) or a SLEEP notice (§7.7), unique by
/// (device, kind, receivedAt) so that a replayed transcript adds nothing.
public struct DeviceTelemetryRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "deviceTelemetry"

    public enum Kind: String, Codable, Hashable, Sendable, DatabaseValueConvertible {
        case battery
        case sleep
    }

    public var id: Int64?
    public var deviceId: Int64
    public var kind: Kind
    public var receivedAt: Int64
    public var batteryMillivolts: UInt16?
    public var batteryPercent: UInt8?
    public var isCharging: Bool?
    public var sleepReason: UInt8?
    /// `nil`: unknown (0xFFFFFFFF on the wire).
    public var wakeAfterSeconds: UInt32?
    public var syncedAt: Int64?

    public init(deviceId: Int64, battery: BatteryStatus, receivedAt: Int64) {
        self.deviceId = deviceId
        self.kind = .battery
        self.receivedAt = receivedAt
        self.batteryMillivolts = battery.millivolts
        self.batteryPercent = battery.percent
        self.isCharging = battery.isCharging
    }

    public init(deviceId: Int64, sleep: SleepNotice, receivedAt: Int64) {
        self.deviceId = deviceId
        self.kind = .sleep
        self.receivedAt = receivedAt
        self.sleepReason = sleep.reason.code
        self.wakeAfterSeconds = sleep.wakeAfterSeconds
    }

    public var battery: BatteryStatus? {
        guard kind == .battery, let batteryMillivolts, let batteryPercent, let isCharging else { return nil }
        return BatteryStatus(millivolts: batteryMillivolts, percent: batteryPercent, isCharging: isCharging)
    }

    public var sleep: SleepNotice? {
        guard kind == .sleep, let sleepReason else { return nil }
        return SleepNotice(reason: SleepNotice.Reason(code: sleepReason), wakeAfterSeconds: wakeAfterSeconds)
    }

    public enum Columns {
        public static let id = Column(CodingKeys.id)
        public static let deviceId = Column(CodingKeys.deviceId)
        public static let kind = Column(CodingKeys.kind)
        public static let receivedAt = Column(CodingKeys.receivedAt)
        public static let batteryMillivolts = Column(CodingKeys.batteryMillivolts)
        public static let batteryPercent = Column(CodingKeys.batteryPercent)
        public static let isCharging = Column(CodingKeys.isCharging)
        public static let sleepReason = Column(CodingKeys.sleepReason)
        public static let wakeAfterSeconds = Column(CodingKeys.wakeAfterSeconds)
        public static let syncedAt = Column(CodingKeys.syncedAt)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
