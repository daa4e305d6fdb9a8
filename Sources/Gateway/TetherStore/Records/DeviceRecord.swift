import GRDB

/// A row of `device`: one consumption device the gateway has met, by serial (§7.2).
///
/// The identity fields are optional because a device row can be created by the first event or anchor of a
/// device whose DEVICE_INFO batch has not been stored yet; the DEVICE_INFO that follows fills them in.
public struct DeviceRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "device"

    public var id: Int64?
    public var serial: String
    /// BLE address as BlueZ reports it (`AA:BB:CC:DD:EE:FF`), once the daemon has linked it to the serial.
    public var address: String?
    public var hardwareRevision: UInt8?
    public var firmwareVersion: String?
    public var protocolVersion: UInt8?
    public var capabilities: UInt16
    /// The boot the device is in as far as the gateway knows (§9.6).
    public var latestBoot: UInt16?
    public var pairingState: PairingState
    public var firstSeenAt: Int64
    public var lastSeenAt: Int64

    public enum PairingState: String, Codable, Hashable, Sendable, CaseIterable, DatabaseValueConvertible {
        /// Seen on the air or on a link, not yet adopted by this gateway.
        case discovered
        case paired
        /// Released by a technician; its data stays until synced and pruned.
        case unpaired
        /// Refused: the daemon does not connect to it.
        case blocked
    }

    public init(
        id: Int64? = nil, serial: String, address: String? = nil, hardwareRevision: UInt8? = nil,
        firmwareVersion: String? = nil, protocolVersion: UInt8? = nil, capabilities: UInt16 = 0,
        latestBoot: UInt16? = nil, pairingState: PairingState = .discovered, firstSeenAt: Int64, lastSeenAt: Int64
    ) {
        self.id = id
        self.serial = serial
        self.address = address
        self.hardwareRevision = hardwareRevision
        self.firmwareVersion = firmwareVersion
        self.protocolVersion = protocolVersion
        self.capabilities = capabilities
        self.latestBoot = latestBoot
        self.pairingState = pairingState
        self.firstSeenAt = firstSeenAt
        self.lastSeenAt = lastSeenAt
    }

    public enum Columns {
        public static let id = Column(CodingKeys.id)
        public static let serial = Column(CodingKeys.serial)
        public static let address = Column(CodingKeys.address)
        public static let hardwareRevision = Column(CodingKeys.hardwareRevision)
        public static let firmwareVersion = Column(CodingKeys.firmwareVersion)
        public static let protocolVersion = Column(CodingKeys.protocolVersion)
        public static let capabilities = Column(CodingKeys.capabilities)
        public static let latestBoot = Column(CodingKeys.latestBoot)
        public static let pairingState = Column(CodingKeys.pairingState)
        public static let firstSeenAt = Column(CodingKeys.firstSeenAt)
        public static let lastSeenAt = Column(CodingKeys.lastSeenAt)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
