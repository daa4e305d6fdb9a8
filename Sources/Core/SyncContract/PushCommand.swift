import Foundation

/// One outbox command in a push (`PushCommand` in docs/specs/sync-api.yaml). `id` is the idempotency key: the server
/// applies a command id once per tenant and answers `duplicate` for it ever after.
public struct PushCommand: Sendable, Hashable {
    public var id: UUID
    public var entityType: EntityType
    public var entityID: String
    public var operation: CommandOperation
    public var payload: CommandPayload
    /// For `deviceSettings`: the server settings version the gateway's desired settings build on (its last
    /// pulled or acknowledged version); a newer server version makes the push a conflict.
    public var baseVersion: Int64?

    public init(id: UUID, entityType: EntityType, entityID: String, operation: CommandOperation, payload: CommandPayload, baseVersion: Int64? = nil) {
        self.id = id
        self.entityType = entityType
        self.entityID = entityID
        self.operation = operation
        self.payload = payload
        self.baseVersion = baseVersion
    }
}

/// A command's payload read as the document its entity type calls for. A payload that does not read as that
/// document is kept as `unreadable` with the reason, so one bad command is rejected on its own instead of
/// failing its whole batch.
public enum CommandPayload: Sendable, Hashable {
    case device(DevicePayload)
    case consumptionEvent(EventPayload)
    case deviceTelemetry(TelemetryPayload)
    case deviceSettings(SettingsPayload)
    case firmwareUpdate(FirmwareUpdatePayload)
    /// A delete carries only the identity in `entity_id`; its payload is not read.
    case identityOnly
    case unreadable(String)
}

extension PushCommand: Codable {
    enum CodingKeys: String, CodingKey {
        case id
        case entityType = "entity_type"
        case entityID = "entity_id"
        case operation
        case payload
        case baseVersion = "base_version"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        entityType = try container.decode(EntityType.self, forKey: .entityType)
        entityID = try container.decode(String.self, forKey: .entityID)
        operation = try container.decode(CommandOperation.self, forKey: .operation)
        // Absent is allowed, null is not (the spec's base_version is an integer).
        baseVersion = container.contains(.baseVersion) ? try container.decode(Int64.self, forKey: .baseVersion) : nil
        // docs/specs/sync-api.yaml: entity_id is 1 to 128 characters, base_version is not negative.
        guard (1...128).contains(entityID.count) else {
            throw DecodingError.dataCorruptedError(forKey: .entityID, in: container, debugDescription: "entity_id must be 1 to 128 characters")
        }
        if let baseVersion, baseVersion < 0 {
            throw DecodingError.dataCorruptedError(forKey: .baseVersion, in: container, debugDescription: "base_version must not be negative")
        }
        // The spec requires an object whatever the operation (create and update check it by decoding the document).
        guard operation != .delete || (try? container.decode([String: JSONValue].self, forKey: .payload)) != nil else {
            throw DecodingError.typeMismatch(
                [String: JSONValue].self,
                .init(codingPath: container.codingPath + [CodingKeys.payload], debugDescription: "payload must be an object"))
        }
        if operation == .delete {
            payload = .identityOnly
            return
        }
        do {
            switch entityType {
            case .device: payload = .device(try container.decode(DevicePayload.self, forKey: .payload))
            case .consumptionEvent: payload = .consumptionEvent(try container.decode(EventPayload.self, forKey: .payload))
            case .deviceTelemetry: payload = .deviceTelemetry(try container.decode(TelemetryPayload.self, forKey: .payload))
            case .deviceSettings: payload = .deviceSettings(try container.decode(SettingsPayload.self, forKey: .payload))
            case .firmwareUpdate: payload = .firmwareUpdate(try container.decode(FirmwareUpdatePayload.self, forKey: .payload))
            }
        } catch let error as DecodingError {
            // A payload that is not an object at all fails the request (it breaks the schema); one that is an
            // object of the wrong shape is this command's problem only.
            guard (try? container.decode([String: JSONValue].self, forKey: .payload)) != nil else { throw error }
            payload = .unreadable("payload is not a valid \(entityType.rawValue) document: \(DecodingErrorText.describe(error))")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(entityType, forKey: .entityType)
        try container.encode(entityID, forKey: .entityID)
        try container.encode(operation, forKey: .operation)
        switch payload {
        case .device(let document): try container.encode(document, forKey: .payload)
        case .consumptionEvent(let document): try container.encode(document, forKey: .payload)
        case .deviceTelemetry(let document): try container.encode(document, forKey: .payload)
        case .deviceSettings(let document): try container.encode(document, forKey: .payload)
        case .firmwareUpdate(let document): try container.encode(document, forKey: .payload)
        case .identityOnly, .unreadable: try container.encode([String: JSONValue](), forKey: .payload)
        }
        try container.encodeIfPresent(baseVersion, forKey: .baseVersion)
    }
}

/// `POST /v1/commands` body.
public struct PushRequest: Codable, Hashable, Sendable {
    public var commands: [PushCommand]

    public init(commands: [PushCommand]) { self.commands = commands }
}

/// A short, path-qualified description of a decoding error for problem details and rejection reasons.
public enum DecodingErrorText {
    public static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? "body" : String(path.drop { $0 == "." })
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return "\(parent == "body" ? "" : parent + ".")\(key.stringValue) is required"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)): \(context.debugDescription)"
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
