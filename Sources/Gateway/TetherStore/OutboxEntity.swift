import GRDB
import LinkProtocol

/// What an outbox command is about, named the way the backend names it: by stable public identities (a serial,
/// an event key), never by local row ids, so a rebuilt gateway database sends the same ids.
///
/// Everything the outbox needs to know about a kind of entity is here: its name, its id's text form, and the row
/// retention may prune once the backend has it. A new kind is a case here, its name inserted into
/// `outboxEntityType` by a migration (`OutboxEntityTypeTests` holds the two lists equal), and its type in
/// SyncContract's `EntityType`; `Outbox` itself does not change.
public enum OutboxEntity: Hashable, Sendable, CustomStringConvertible {
    case device(serial: String)
    case consumptionEvent(EventKey)
    case telemetry(serial: String, kind: DeviceTelemetryRecord.Kind, receivedAt: Int64)
    case deviceSettings(serial: String)
    /// A finished firmware update, by its uid (`FirmwareUpdateJournal`).
    case firmwareUpdate(uid: String)

    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable, DatabaseValueConvertible {
        case device
        case consumptionEvent
        case deviceTelemetry
        case deviceSettings
        case firmwareUpdate
    }

    public var kind: Kind {
        switch self {
        case .device: .device
        case .consumptionEvent: .consumptionEvent
        case .telemetry: .deviceTelemetry
        case .deviceSettings: .deviceSettings
        case .firmwareUpdate: .firmwareUpdate
        }
    }

    /// `SERIAL`, `SERIAL/boot/sequence`, `SERIAL/kind/receivedAt`, an update's uid. A serial may itself contain `/` (§7.2 allows
    /// any printable ASCII), so composite ids are parsed from the right.
    public var id: String {
        switch self {
        case .device(let serial), .deviceSettings(let serial): serial
        case .consumptionEvent(let key): "\(key.serial)/\(key.bootCounter)/\(key.sequence)"
        case .telemetry(let serial, let kind, let receivedAt): "\(serial)/\(kind.rawValue)/\(receivedAt)"
        case .firmwareUpdate(let uid): uid
        }
    }

    public init?(kind: Kind, id: String) {
        switch kind {
        case .device:
            self = .device(serial: id)
        case .deviceSettings:
            self = .deviceSettings(serial: id)
        case .consumptionEvent:
            guard let (serial, middle, last) = Self.split(id), let boot = UInt16(middle), let sequence = Int64(last) else { return nil }
            self = .consumptionEvent(EventKey(serial: serial, bootCounter: boot, sequence: sequence))
        case .deviceTelemetry:
            guard let (serial, middle, last) = Self.split(id), let telemetryKind = DeviceTelemetryRecord.Kind(rawValue: middle),
                let receivedAt = Int64(last)
            else { return nil }
            self = .telemetry(serial: serial, kind: telemetryKind, receivedAt: receivedAt)
        case .firmwareUpdate:
            guard id.utf8.count == 36 else { return nil }
            self = .firmwareUpdate(uid: id)
        }
    }

    public var description: String { "\(kind.rawValue) \(id)" }

    /// The row that holds this entity's data and a `syncedAt` column, once the backend has every command about it
    /// (retention prunes synced rows when they are old enough); nil for entities that are never pruned.
    var retainedRow: RetainedRow? {
        switch self {
        case .consumptionEvent(let key):
            RetainedRow(
                table: "consumptionEvent",
                match: "deviceId = (SELECT id FROM device WHERE serial = ?) AND bootCounter = ? AND sequence = ?",
                arguments: [key.serial, key.bootCounter, key.sequence])
        case .telemetry(let serial, let kind, let receivedAt):
            RetainedRow(
                table: "deviceTelemetry",
                match: "deviceId = (SELECT id FROM device WHERE serial = ?) AND kind = ? AND receivedAt = ?",
                arguments: [serial, kind.rawValue, receivedAt])
        case .device, .deviceSettings, .firmwareUpdate:
            nil
        }
    }

    /// A table and the WHERE clause that finds one entity's row in it (`retainedRow`).
    struct RetainedRow {
        let table: String
        let match: String
        let arguments: StatementArguments
    }

    private static func split(_ id: String) -> (String, String, String)? {
        guard let lastSlash = id.lastIndex(of: "/") else { return nil }
        let head = id[..<lastSlash]
        guard let middleSlash = head.lastIndex(of: "/") else { return nil }
        let serial = String(head[..<middleSlash])
        guard !serial.isEmpty else { return nil }
        return (serial, String(head[head.index(after: middleSlash)...]), String(id[id.index(after: lastSlash)...]))
    }
}
