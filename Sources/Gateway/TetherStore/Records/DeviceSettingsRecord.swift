import GRDB
import LinkProtocol
import TetherSettings

/// A row of `deviceSettings`: what is wanted on a device, what it reported, and the last state both agreed on
/// (the base of the three-way merge, `SettingsMerge`). Settings columns hold JSON.
public struct DeviceSettingsRecord: Codable, Hashable, Sendable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "deviceSettings"

    public var deviceId: Int64
    /// Settings the backend or a technician wants on the device, with the version the device is asked to report.
    public var desiredVersion: UInt32?
    public var desiredSettings: DeviceSettings?
    public var desiredChangedBy: SettingsAuthor?
    public var desiredChangedAt: Int64?
    /// The device's latest CONFIG_DATA (§7.11).
    public var reportedVersion: UInt32?
    public var reportedSettings: DeviceSettings?
    public var reportedAt: Int64?
    /// The settings at the last sync: what desired and reported last agreed on.
    public var baseVersion: UInt32?
    public var baseSettings: DeviceSettings?
    /// The server's settings version the desired settings build on, and the server's desired settings at that
    /// version: the `base_version` of a technician's push and the base of the merge when the server answers 409.
    /// Captured with each change, so a pull of a newer version before the push does not move it.
    public var serverVersion: Int64?
    public var serverSettings: DeviceSettings?
    /// Fields changed differently on both sides since the base; surfaced until someone resolves them.
    public var conflicts: [SettingConflict]
    public var updatedAt: Int64

    public init(deviceId: Int64, updatedAt: Int64) {
        self.deviceId = deviceId
        self.conflicts = []
        self.updatedAt = updatedAt
    }

    public var desired: DeviceConfig? {
        guard let desiredVersion, let desiredSettings else { return nil }
        return DeviceConfig(version: desiredVersion, settings: desiredSettings)
    }

    public var reported: DeviceConfig? {
        guard let reportedVersion, let reportedSettings else { return nil }
        return DeviceConfig(version: reportedVersion, settings: reportedSettings)
    }

    public var base: DeviceConfig? {
        guard let baseVersion, let baseSettings else { return nil }
        return DeviceConfig(version: baseVersion, settings: baseSettings)
    }

    /// The device confirmed the desired settings by reporting their version (§7.11).
    public var isConfirmed: Bool { desiredVersion == nil || desiredVersion == reportedVersion }

    public enum Columns {
        public static let deviceId = Column(CodingKeys.deviceId)
        public static let desiredVersion = Column(CodingKeys.desiredVersion)
        public static let desiredSettings = Column(CodingKeys.desiredSettings)
        public static let desiredChangedBy = Column(CodingKeys.desiredChangedBy)
        public static let desiredChangedAt = Column(CodingKeys.desiredChangedAt)
        public static let reportedVersion = Column(CodingKeys.reportedVersion)
        public static let reportedSettings = Column(CodingKeys.reportedSettings)
        public static let reportedAt = Column(CodingKeys.reportedAt)
        public static let baseVersion = Column(CodingKeys.baseVersion)
        public static let baseSettings = Column(CodingKeys.baseSettings)
        public static let serverVersion = Column(CodingKeys.serverVersion)
        public static let serverSettings = Column(CodingKeys.serverSettings)
        public static let conflicts = Column(CodingKeys.conflicts)
        public static let updatedAt = Column(CodingKeys.updatedAt)
    }
}

/// Who asked for the desired settings.
public enum SettingsAuthor: String, Codable, Hashable, Sendable, DatabaseValueConvertible {
    case backend
    case technician
}
