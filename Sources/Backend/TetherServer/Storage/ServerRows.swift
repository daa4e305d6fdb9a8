import Foundation
import SyncContract

// The server's rows as plain values, shared by both storage backends and the batch planner. Every row belongs to
// one tenant; the tenant is the scope of a store call, never a field a request can set.

/// A device in a tenant's registry. Deleted devices stay as tombstones so their version keeps counting.
public struct DeviceRow: Hashable, Sendable, Codable {
    public var serial: String
    public var hardwareRevision: Int?
    public var firmwareVersion: String?
    public var protocolVersion: Int?
    public var capabilities: Int
    public var pairingState: PairingState
    public var version: Int64
    public var deleted: Bool

    public init(document: DevicePayload, version: Int64, deleted: Bool = false) {
        serial = document.serial
        hardwareRevision = document.hardwareRevision
        firmwareVersion = document.firmwareVersion
        protocolVersion = document.protocolVersion
        capabilities = document.capabilities
        pairingState = document.pairingState
        self.version = version
        self.deleted = deleted
    }

    public var document: DevicePayload {
        DevicePayload(
            serial: serial, hardwareRevision: hardwareRevision, firmwareVersion: firmwareVersion, protocolVersion: protocolVersion,
            capabilities: capabilities, pairingState: pairingState)
    }
}

/// A device's settings: the desired settings with the server's version (the ETag), and what the gateway last
/// reported from the device.
public struct SettingsRow: Hashable, Sendable {
    public var serial: String
    /// 0 until desired settings exist; +1 for every change of `desired`.
    public var version: Int64
    public var desired: SettingsDocument?
    public var changedBy: SettingsChangeAuthor?
    public var reported: SettingsDocument?
    public var reportedVersion: Int64?
    public var conflicts: [SettingConflictPayload]

    public init(serial: String) {
        self.serial = serial
        self.version = 0
        self.conflicts = []
    }

    public var resource: DeviceSettingsResource {
        DeviceSettingsResource(
            serial: serial, version: version, desired: desired, changedBy: changedBy, reported: reported, reportedVersion: reportedVersion,
            conflicts: conflicts)
    }
}

public struct StoredEventKey: Hashable, Sendable, Codable {
    public var serial: String
    public var bootCounter: Int
    public var sequence: Int64

    public init(serial: String, bootCounter: Int, sequence: Int64) {
        self.serial = serial
        self.bootCounter = bootCounter
        self.sequence = sequence
    }
}

public struct StoredTelemetryKey: Hashable, Sendable, Codable {
    public var serial: String
    public var kind: TelemetryKind
    public var receivedAt: Int64

    public init(serial: String, kind: TelemetryKind, receivedAt: Int64) {
        self.serial = serial
        self.kind = kind
        self.receivedAt = receivedAt
    }
}

/// A stored consumption event with its version (1 on create, +1 per update) and the gateway that sent it last.
public struct EventRow: Hashable, Sendable {
    public var document: EventPayload
    public var version: Int64
    public var gateway: String

    public var key: StoredEventKey { StoredEventKey(serial: document.serial, bootCounter: document.bootCounter, sequence: document.sequence) }
}

public struct TelemetryRow: Hashable, Sendable {
    public var document: TelemetryPayload
    public var version: Int64
    public var gateway: String

    public var key: StoredTelemetryKey { StoredTelemetryKey(serial: document.serial, kind: document.kind, receivedAt: document.receivedAt) }
}

/// A firmware update's ending as a gateway reported it: written once (issue 16).
public struct FirmwareUpdateRow: Hashable, Sendable {
    public var document: FirmwareUpdatePayload
    public var gateway: String

    public init(document: FirmwareUpdatePayload, gateway: String) {
        self.document = document
        self.gateway = gateway
    }
}

/// The record of an applied command id: the idempotency key, written in the transaction that applied it.
public struct CommandLogRow: Hashable, Sendable {
    public var id: UUID
    public var gateway: String
    /// SHA-256 of the command's canonical form: the same id with other content is refused.
    public var fingerprint: [UInt8]
    /// The entity version the command left, returned again with `duplicate`.
    public var version: Int64?
}

/// A change-feed entry to append: its sequence is assigned by the database at insert.
public struct FeedEntry: Hashable, Sendable {
    /// The gateway whose push caused it (it is not sent back to that gateway); `nil` for backend changes.
    public var origin: String?
    public var change: Change
}

/// A token as stored: never the token itself.
public struct TokenRecord: Hashable, Sendable {
    public var id: String
    public var secretHash: [UInt8]
    public var tenant: String
    public var gateway: String
    public var createdAt: Date
    public var revokedAt: Date?

    public init(id: String, secretHash: [UInt8], tenant: String, gateway: String, createdAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.secretHash = secretHash
        self.tenant = tenant
        self.gateway = gateway
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Rows per table for one tenant: what the tests and the benchmark compare with the gateway's counts.
public struct TenantStatistics: Hashable, Sendable {
    public var devices = 0
    public var deletedDevices = 0
    public var events = 0
    public var telemetry = 0
    public var settings = 0
    public var appliedCommands = 0
    public var feedEntries = 0

    public init() {}
}
