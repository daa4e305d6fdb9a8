import Foundation
import GRDB

/// A row of `peripheral`: one BLE device the gateway has met, whatever its kind (migration v4).
public struct PeripheralRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "peripheral"

    public var id: Int64?
    /// The gateway-assigned id (UUIDv7, lowercase): how health samples and the backend name the device.
    public var uid: String
    /// BlueZ's address of the device (`AA:BB:CC:DD:EE:FF`); for a bonded device with a private address, the
    /// identity address bonding resolved.
    public var identityAddress: String?
    /// What the gateway runs on it, decided from its GATT services (a JSON array of `PeripheralKind` raw values).
    public var kinds: [PeripheralKind]
    /// The services of a device that matched no kind (128-bit UUIDs), so a technician can see why it is not served.
    public var unsupportedServices: [String]?
    /// The Tether link device's own record (`device.id`), for a device of kind `tetherLink`.
    public var linkDeviceId: Int64?
    public var deviceInformation: DeviceInformation
    public var firstSeenAt: Int64
    public var lastSeenAt: Int64
    /// When the gateway adopted the bonded peripheral (paired it, or adopted a bond made elsewhere); nil if it never
    /// did or has forgotten it since (migration v7). The gateway keeps every adopted peripheral connected.
    public var adoptedAt: Int64?
    /// The MCUboot image the device runs after the latest firmware update that left it on one (migration v13); nil
    /// if tetherd never updated it.
    public var runningImage: RunningImage?

    /// The image a firmware update left a device running (`FirmwareUpdateJournal.finish`).
    public struct RunningImage: Codable, Hashable, Sendable {
        /// `major.minor.revision+build`, as imgtool writes it.
        public var version: String
        /// The image's SHA256 TLV: what the device's image state reports for it.
        public var hash: Data
        /// Confirmed: permanent. Not confirmed (left in test): MCUboot reverts it at the next reset.
        public var confirmed: Bool
        /// The update that put it there.
        public var updateUid: String

        public init(version: String, hash: Data, confirmed: Bool, updateUid: String) {
            self.version = version
            self.hash = hash
            self.confirmed = confirmed
            self.updateUid = updateUid
        }
    }

    public init(uid: String, identityAddress: String?, at nanoseconds: Int64) {
        self.uid = uid
        self.identityAddress = identityAddress
        kinds = []
        deviceInformation = DeviceInformation()
        firstSeenAt = nanoseconds
        lastSeenAt = nanoseconds
    }

    public enum Columns {
        public static let id = Column("id")
        public static let uid = Column("uid")
        public static let identityAddress = Column("identityAddress")
        public static let kinds = Column("kinds")
        public static let unsupportedServices = Column("unsupportedServices")
        public static let linkDeviceId = Column("linkDeviceId")
        public static let lastSeenAt = Column("lastSeenAt")
        public static let adoptedAt = Column("adoptedAt")
    }

    public init(row: Row) throws {
        id = row["id"]
        uid = row["uid"]
        identityAddress = row["identityAddress"]
        kinds = try Self.decodeJSON([String].self, row["kinds"] as String? ?? "[]").compactMap(PeripheralKind.init(rawValue:))
        unsupportedServices = try (row["unsupportedServices"] as String?).map { try Self.decodeJSON([String].self, $0) }
        linkDeviceId = row["linkDeviceId"]
        deviceInformation = DeviceInformation(
            manufacturerName: row["manufacturerName"], modelNumber: row["modelNumber"], serialNumber: row["serialNumber"],
            hardwareRevision: row["hardwareRevision"], firmwareRevision: row["firmwareRevision"],
            softwareRevision: row["softwareRevision"], systemId: row["systemId"],
            pnpId: PnPID(source: row["pnpVendorIdSource"], vendor: row["pnpVendorId"], product: row["pnpProductId"], version: row["pnpProductVersion"]))
        firstSeenAt = row["firstSeenAt"]
        lastSeenAt = row["lastSeenAt"]
        adoptedAt = row["adoptedAt"]
        if let version: String = row["runningImageVersion"], let hash: Data = row["runningImageHash"], let update: String = row["runningImageUpdate"] {
            runningImage = RunningImage(version: version, hash: hash, confirmed: (row["runningImageConfirmed"] as Int?) == 1, updateUid: update)
        }
    }

    public func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["uid"] = uid
        container["identityAddress"] = identityAddress
        container["kinds"] = try Self.encodeJSON(kinds.map(\.rawValue))
        container["unsupportedServices"] = try unsupportedServices.map(Self.encodeJSON)
        container["linkDeviceId"] = linkDeviceId
        container["manufacturerName"] = deviceInformation.manufacturerName
        container["modelNumber"] = deviceInformation.modelNumber
        container["serialNumber"] = deviceInformation.serialNumber
        container["hardwareRevision"] = deviceInformation.hardwareRevision
        container["firmwareRevision"] = deviceInformation.firmwareRevision
        container["softwareRevision"] = deviceInformation.softwareRevision
        container["systemId"] = deviceInformation.systemId
        container["pnpVendorIdSource"] = deviceInformation.pnpId.map { Int($0.vendorIdSource.rawValue) }
        container["pnpVendorId"] = deviceInformation.pnpId.map { Int($0.vendorId) }
        container["pnpProductId"] = deviceInformation.pnpId.map { Int($0.productId) }
        container["pnpProductVersion"] = deviceInformation.pnpId.map { Int($0.productVersion) }
        container["firstSeenAt"] = firstSeenAt
        container["lastSeenAt"] = lastSeenAt
        container["adoptedAt"] = adoptedAt
        container["runningImageVersion"] = runningImage?.version
        container["runningImageHash"] = runningImage?.hash
        container["runningImageConfirmed"] = runningImage.map { $0.confirmed ? 1 : 0 }
        container["runningImageUpdate"] = runningImage?.updateUid
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    private static func encodeJSON(_ value: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }
}

/// What runs on a peripheral. The vocabulary grows with the gateway's peripheral sessions: a kind is recorded only
/// when the gateway has a session for it.
public enum PeripheralKind: String, Codable, Hashable, Sendable, CaseIterable, Comparable {
    /// Tether's link protocol (docs/specs/link-protocol.md §2): consumption events, time sync, settings.
    case tetherLink = "tether-link"
    /// The Device Information Service (0x180A), read on every connection.
    case deviceInformation = "device-information"
    /// Standard Bluetooth SIG health services (heart rate, blood pressure, thermometer, scale, glucose, pulse
    /// oximeter, CGM): their measurements through the health lanes.
    case health

    /// A kind that is a reason to keep the device connected; a device with none is unsupported.
    public var isPrimary: Bool {
        switch self {
        case .tetherLink, .health: true
        case .deviceInformation: false
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// The Device Information Service (0x180A) as a device reports it: each field is optional in the service.
public struct DeviceInformation: Codable, Hashable, Sendable {
    public var manufacturerName: String?
    public var modelNumber: String?
    public var serialNumber: String?
    public var hardwareRevision: String?
    public var firmwareRevision: String?
    public var softwareRevision: String?
    /// System ID (0x2A23): 8 bytes as 16 lowercase hex digits.
    public var systemId: String?
    /// PnP ID (0x2A50): who made the device and which product and version it is, by registered numbers.
    public var pnpId: PnPID?

    public init(
        manufacturerName: String? = nil, modelNumber: String? = nil, serialNumber: String? = nil,
        hardwareRevision: String? = nil, firmwareRevision: String? = nil, softwareRevision: String? = nil,
        systemId: String? = nil, pnpId: PnPID? = nil
    ) {
        self.pnpId = pnpId
        self.manufacturerName = manufacturerName
        self.modelNumber = modelNumber
        self.serialNumber = serialNumber
        self.hardwareRevision = hardwareRevision
        self.firmwareRevision = firmwareRevision
        self.softwareRevision = softwareRevision
        self.systemId = systemId
    }
}

/// The Device Information Service's PnP ID (0x2A50; DIS v1.1 §3.9): a vendor ID from the Bluetooth SIG's or the
/// USB-IF's register, the vendor's product ID and its version. Unlike the free-text model number, these name a
/// product the same way on every device that carries it.
public struct PnPID: Codable, Hashable, Sendable {
    public enum VendorIdSource: UInt8, Codable, Hashable, Sendable {
        /// The vendor ID is a Bluetooth SIG company identifier (Assigned Numbers §7).
        case bluetoothSIG = 1
        /// The vendor ID is a USB Implementer's Forum vendor ID.
        case usbImplementersForum = 2
    }

    public var vendorIdSource: VendorIdSource
    public var vendorId: UInt16
    public var productId: UInt16
    /// Major, minor and sub-minor as JJ.M.N, one byte and two nibbles (0x0123 is 1.2.3).
    public var productVersion: UInt16

    public init(vendorIdSource: VendorIdSource, vendorId: UInt16, productId: UInt16, productVersion: UInt16) {
        self.vendorIdSource = vendorIdSource
        self.vendorId = vendorId
        self.productId = productId
        self.productVersion = productVersion
    }

    /// From its four stored columns; nil unless all are present and in range.
    init?(source: Int?, vendor: Int?, product: Int?, version: Int?) {
        guard let source, let vendor, let product, let version,
            let kind = UInt8(exactly: source).flatMap(VendorIdSource.init(rawValue:)),
            let vendor = UInt16(exactly: vendor), let product = UInt16(exactly: product), let version = UInt16(exactly: version)
        else { return nil }
        self.init(vendorIdSource: kind, vendorId: vendor, productId: product, productVersion: version)
    }

    /// The characteristic's 7 bytes, little-endian (DIS v1.1 §3.9); nil for another length or a vendor ID source
    /// that is neither register (0 and 3-255 are reserved).
    public init?(characteristicValue value: [UInt8]) {
        guard value.count == 7, let kind = VendorIdSource(rawValue: value[0]) else { return nil }
        func uint16(_ at: Int) -> UInt16 { UInt16(value[at]) | UInt16(value[at + 1]) << 8 }
        self.init(vendorIdSource: kind, vendorId: uint16(1), productId: uint16(3), productVersion: uint16(5))
    }

    /// `bluetooth-sig:0x0059/0x0001 v1.2.3`, for people.
    public var description: String {
        let source = vendorIdSource == .bluetoothSIG ? "bluetooth-sig" : "usb-if"
        let hex = { (value: UInt16) in "0x" + String(repeating: "0", count: 4 - String(value, radix: 16).count) + String(value, radix: 16) }
        return "\(source):\(hex(vendorId))/\(hex(productId)) v\(productVersion >> 8).\(productVersion >> 4 & 0xF).\(productVersion & 0xF)"
    }
}
