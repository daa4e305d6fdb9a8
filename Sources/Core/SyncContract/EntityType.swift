/// What a pushed command is about. The raw values are the gateway outbox's entity kinds (TetherStore's
/// `OutboxEntity.Kind`), so a command travels with the names it was queued under.
public enum EntityType: String, Codable, Hashable, Sendable, CaseIterable {
    case device
    case consumptionEvent
    case deviceTelemetry
    case deviceSettings
    case firmwareUpdate
}

public enum CommandOperation: String, Codable, Hashable, Sendable, CaseIterable {
    case create
    case update
    case delete
}

/// The identity a command's `entity_id` names (the outbox's `OutboxEntity.id` format): `SERIAL` for devices and
/// settings, `SERIAL/boot/sequence` for events, `SERIAL/kind/receivedAt` for telemetry, the update's uid (a lowercase
/// UUID) for a firmware update. A serial may itself hold `/`, so composite ids are split from the right.
public enum EntityIdentity: Hashable, Sendable {
    case device(serial: String)
    case consumptionEvent(serial: String, bootCounter: Int, sequence: Int64)
    case deviceTelemetry(serial: String, kind: TelemetryKind, receivedAt: Int64)
    case deviceSettings(serial: String)
    case firmwareUpdate(uid: String)

    public init?(type: EntityType, id: String) {
        switch type {
        case .device:
            guard Self.isValidSerial(id) else { return nil }
            self = .device(serial: id)
        case .deviceSettings:
            guard Self.isValidSerial(id) else { return nil }
            self = .deviceSettings(serial: id)
        case .consumptionEvent:
            guard let (serial, middle, last) = Self.split(id), let boot = Int(middle), (0...65535).contains(boot),
                let sequence = Int64(last), sequence >= 0
            else { return nil }
            self = .consumptionEvent(serial: serial, bootCounter: boot, sequence: sequence)
        case .deviceTelemetry:
            guard let (serial, middle, last) = Self.split(id), let kind = TelemetryKind(rawValue: middle), let receivedAt = Int64(last)
            else { return nil }
            self = .deviceTelemetry(serial: serial, kind: kind, receivedAt: receivedAt)
        case .firmwareUpdate:
            guard FirmwareUpdatePayload.isLowercaseUUID(id) else { return nil }
            self = .firmwareUpdate(uid: id)
        }
    }

    /// The device the identity names; a firmware update names its device in its document, if at all.
    public var serial: String? {
        switch self {
        case .device(let serial), .deviceSettings(let serial), .consumptionEvent(let serial, _, _), .deviceTelemetry(let serial, _, _):
            serial
        case .firmwareUpdate:
            nil
        }
    }

    /// §7.2: 1 to 32 printable ASCII characters.
    public static func isValidSerial(_ serial: String) -> Bool {
        let bytes = serial.utf8
        return (1...32).contains(bytes.count) && bytes.allSatisfy { (0x20...0x7E).contains($0) }
    }

    private static func split(_ id: String) -> (String, String, String)? {
        guard let lastSlash = id.lastIndex(of: "/") else { return nil }
        let head = id[..<lastSlash]
        guard let middleSlash = head.lastIndex(of: "/") else { return nil }
        let serial = String(head[..<middleSlash])
        guard isValidSerial(serial) else { return nil }
        return (serial, String(head[head.index(after: middleSlash)...]), String(id[id.index(after: lastSlash)...]))
    }
}

public enum TelemetryKind: String, Codable, Hashable, Sendable {
    case battery
    case sleep
}

public enum PairingState: String, Codable, Hashable, Sendable, CaseIterable {
    case discovered
    case paired
    case unpaired
    case blocked
}

public enum SettingsChangeAuthor: String, Codable, Hashable, Sendable {
    case backend
    case technician
}
