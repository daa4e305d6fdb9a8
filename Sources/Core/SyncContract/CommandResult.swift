import Foundation

/// What the server did with one pushed command (`CommandResult` in docs/specs/sync-api.yaml).
public struct CommandResult: Codable, Hashable, Sendable {
    public enum Status: String, Codable, Hashable, Sendable {
        /// Written now, in the same transaction as the record of its id.
        case applied
        /// This id was applied before (by this or an earlier request): nothing was written again.
        case duplicate
        /// The server's state disagrees with the command; `conflict` has the server's version and value.
        case conflict
        /// The server will never apply it; `reason` says why. Retrying the same command cannot succeed.
        case rejected
    }

    public var id: UUID
    public var status: Status
    /// The entity's server version after the command (applied, duplicate), when the entity is versioned.
    public var version: Int64?
    public var conflict: Conflict?
    public var reason: String?

    public struct Conflict: Codable, Hashable, Sendable {
        public var serverVersion: Int64
        /// The server's current document for the entity (the same shape as the command's payload; for settings,
        /// the desired `SettingsDocument`).
        public var serverValue: JSONValue

        public init(serverVersion: Int64, serverValue: JSONValue) {
            self.serverVersion = serverVersion
            self.serverValue = serverValue
        }

        enum CodingKeys: String, CodingKey {
            case serverVersion = "server_version"
            case serverValue = "server_value"
        }
    }

    public init(id: UUID, status: Status, version: Int64? = nil, conflict: Conflict? = nil, reason: String? = nil) {
        self.id = id
        self.status = status
        self.version = version
        self.conflict = conflict
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case id, status, version, conflict, reason
    }

    // Ids are written in lowercase, as the gateway sends them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(version, forKey: .version)
        try container.encodeIfPresent(conflict, forKey: .conflict)
        try container.encodeIfPresent(reason, forKey: .reason)
    }

    public static func applied(_ id: UUID, version: Int64? = nil) -> Self { Self(id: id, status: .applied, version: version) }
    public static func duplicate(_ id: UUID, version: Int64? = nil) -> Self { Self(id: id, status: .duplicate, version: version) }
    public static func rejected(_ id: UUID, _ reason: String) -> Self { Self(id: id, status: .rejected, reason: reason) }
    public static func conflict(_ id: UUID, serverVersion: Int64, serverValue: JSONValue, reason: String) -> Self {
        Self(id: id, status: .conflict, conflict: Conflict(serverVersion: serverVersion, serverValue: serverValue), reason: reason)
    }
}

/// `POST /v1/commands` response: one result per command, in request order.
public struct PushResponse: Codable, Hashable, Sendable {
    public var results: [CommandResult]

    public init(results: [CommandResult]) { self.results = results }
}
