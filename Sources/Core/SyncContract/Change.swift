/// One entry of a tenant's change feed (`Change` in docs/specs/sync-api.yaml): the device registry, desired settings
/// and deletions, as the gateway should apply them.
public struct Change: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable {
        case device
        case deviceSettings
    }

    public enum Operation: String, Codable, Hashable, Sendable {
        case upsert
        /// The entity is gone from the backend (a device deleted from the registry; its settings go with it).
        case delete
    }

    /// What the backend wants on the device: overlaid on the gateway's desired settings.
    public struct DesiredSettings: Codable, Hashable, Sendable {
        public var desired: SettingsDocument
        public var changedBy: SettingsChangeAuthor

        public init(desired: SettingsDocument, changedBy: SettingsChangeAuthor) {
            self.desired = desired
            self.changedBy = changedBy
        }

        enum CodingKeys: String, CodingKey {
            case desired
            case changedBy = "changed_by"
        }
    }

    public var kind: Kind
    public var operation: Operation
    public var serial: String
    /// The entity's server version after this change: devices and settings count their own versions from 1.
    public var version: Int64
    /// For `device` upserts.
    public var device: DevicePayload?
    /// For `deviceSettings` upserts.
    public var settings: DesiredSettings?

    public init(kind: Kind, operation: Operation, serial: String, version: Int64, device: DevicePayload? = nil, settings: DesiredSettings? = nil) {
        self.kind = kind
        self.operation = operation
        self.serial = serial
        self.version = version
        self.device = device
        self.settings = settings
    }

    /// `nil` when the change is well formed: an upsert carries the document of its kind and nothing else.
    public var problem: String? {
        if !EntityIdentity.isValidSerial(serial) { return "serial is not a valid device serial" }
        if version < 1 { return "version must be at least 1" }
        switch (kind, operation) {
        case (.device, .upsert):
            guard let device, settings == nil else { return "a device upsert carries a device document and nothing else" }
            if device.serial != serial { return "the device document names \(device.serial), the change \(serial)" }
            return device.problem
        case (.deviceSettings, .upsert):
            guard let settings, device == nil else { return "a settings upsert carries settings and nothing else" }
            return settings.desired.problem
        case (.device, .delete), (.deviceSettings, .delete):
            return device == nil && settings == nil ? nil : "a delete carries no document"
        }
    }

    enum CodingKeys: String, CodingKey {
        case kind
        case operation
        case serial
        case version
        case device
        case settings
    }
}

/// `GET /v1/changes` response: one page of the feed after the request's cursor.
public struct ChangePage: Codable, Hashable, Sendable {
    public var changes: [Change]
    /// Where the next request starts (`after`). Never behind the request's cursor.
    public var nextCursor: String
    public var hasMore: Bool
    /// `changes.count`, stated by the server for the integrity gate.
    public var count: Int
    /// `PageChecksum.checksum(of: changes)`, stated by the server for the integrity gate.
    public var checksum: String

    public init(changes: [Change], nextCursor: String, hasMore: Bool, count: Int, checksum: String) {
        self.changes = changes
        self.nextCursor = nextCursor
        self.hasMore = hasMore
        self.count = count
        self.checksum = checksum
    }

    /// A page whose count and checksum are computed from its changes.
    public init(changes: [Change], nextCursor: SyncCursor, hasMore: Bool) {
        self.init(changes: changes, nextCursor: nextCursor.token, hasMore: hasMore, count: changes.count, checksum: PageChecksum.checksum(of: changes))
    }

    enum CodingKeys: String, CodingKey {
        case changes
        case nextCursor = "next_cursor"
        case hasMore = "has_more"
        case count
        case checksum
    }
}
