/// One entry of a tenant's change feed (`Change` in docs/specs/sync-api.yaml): the device registry, desired settings,
/// their deletions, and health samples the backend deleted, as the gateway should apply them.
public struct Change: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable {
        case device
        case deviceSettings
        /// A health sample the backend deleted (issue 14, the change lane): only `delete`, with `healthDeletion`.
        case healthSample
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
    /// The device of a `device` or `deviceSettings` change; absent from a `healthSample` one (a health sample names
    /// its device by the gateway's uid, inside the tombstone).
    public var serial: String?
    /// The entity's server version after this change: devices and settings count their own versions from 1; a
    /// health sample is deleted once, version 1.
    public var version: Int64
    /// For `device` upserts.
    public var device: DevicePayload?
    /// For `deviceSettings` upserts.
    public var settings: DesiredSettings?
    /// For `healthSample` deletes: the backend's tombstone, as a gateway would upload it (reason and requester
    /// `backend`). The gateway stores it under the same uid, so its upload of it is the server's `duplicate`.
    public var healthDeletion: HealthDeletionUpload?

    public init(
        kind: Kind, operation: Operation, serial: String?, version: Int64, device: DevicePayload? = nil, settings: DesiredSettings? = nil,
        healthDeletion: HealthDeletionUpload? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.serial = serial
        self.version = version
        self.device = device
        self.settings = settings
        self.healthDeletion = healthDeletion
    }

    /// A health sample's deletion by the backend.
    public static func healthSampleDeleted(_ tombstone: HealthDeletionUpload) -> Change {
        Change(kind: .healthSample, operation: .delete, serial: nil, version: 1, healthDeletion: tombstone)
    }

    /// `nil` when the change is well formed: an upsert carries the document of its kind and nothing else.
    public var problem: String? {
        if kind == .healthSample { return healthSampleProblem }
        guard let serial else { return "a \(kind.rawValue) change names its device's serial" }
        if !EntityIdentity.isValidSerial(serial) { return "serial is not a valid device serial" }
        if version < 1 { return "version must be at least 1" }
        if healthDeletion != nil { return "only a healthSample change carries a health_deletion" }
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
        case (.healthSample, _):
            return healthSampleProblem
        }
    }

    /// The rules of a `healthSample` change: a delete, version 1, no serial, and a tombstone of the backend's that the
    /// gateway's `healthDeletion` table can hold as it is (lowercase UUIDs, a note of 1 to 1,000 characters).
    private var healthSampleProblem: String? {
        guard operation == .delete else { return "a healthSample change is a delete" }
        guard serial == nil, device == nil, settings == nil else { return "a healthSample change carries a health_deletion and nothing else" }
        guard version == 1 else { return "a health sample is deleted once: version 1" }
        guard let tombstone = healthDeletion else { return "a healthSample change carries a health_deletion" }
        for (name, uid) in [("uid", tombstone.uid), ("sample_uid", tombstone.sampleUid)] where !Self.isLowercaseUUID(uid) {
            return "health_deletion.\(name) is not a lowercase UUID"
        }
        guard tombstone.reason == "backend", tombstone.requestedBy == "backend" else {
            return "the feed carries the backend's deletions only: reason and requested_by are backend"
        }
        guard tombstone.replacementSampleUid == nil else { return "a deletion by the backend has no replacement sample" }
        if let note = tombstone.note, note.isEmpty || note.unicodeScalars.count > 1000 { return "health_deletion.note is 1 to 1000 characters" }
        guard tombstone.requestedAt > 0 else { return "health_deletion.requested_at is nanoseconds since the Unix epoch" }
        if let key = tombstone.sampleDedupKey, key.isEmpty || key.unicodeScalars.count > 512 { return "health_deletion.sample_dedup_key is 1 to 512 characters" }
        return nil
    }

    static func isLowercaseUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        return bytes.enumerated().allSatisfy { index, byte in
            [8, 13, 18, 23].contains(index) ? byte == UInt8(ascii: "-") : (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
        }
    }

    enum CodingKeys: String, CodingKey {
        case kind
        case operation
        case serial
        case version
        case device
        case settings
        case healthDeletion = "health_deletion"
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
