/// How a firmware update tetherd made ended (issue 16, "The update flow": "the outcome and the new firmware version
/// ... reach the backend through the outbox"). The gateway writes it once, in the transaction that records the
/// update's end in its journal, so the backend hears of every finished update exactly once and never of one still
/// running. Unique by `uid`, the update's id on the gateway (the control API's and the journal's).
public struct FirmwareUpdatePayload: Codable, Hashable, Sendable {
    public var uid: String
    /// The device's Bluetooth identity address (`AA:BB:CC:DD:EE:FF`).
    public var address: String
    /// The Tether link device's serial, when the device is one (its `device` entity).
    public var serial: String?
    /// The gateway's peripheral uid of the device, when the gateway has registered it (as health samples name it).
    public var peripheralUid: String?
    /// The image's MCUboot version, `major.minor.revision+build` as imgtool writes it.
    public var imageVersion: String
    /// The image's SHA256 TLV in lowercase hex: what the device's image state reports for it.
    public var imageHash: String
    public var imageBytes: Int
    public var outcome: FirmwareUpdateOutcome
    /// Why it failed, reverted or was cancelled, in words for a technician.
    public var message: String?
    /// How many times the update was (re)started: 1 for one that ran through.
    public var attempts: Int
    /// Nanoseconds since the Unix epoch, on the gateway's clock.
    public var startedAt: Int64
    public var finishedAt: Int64

    public init(
        uid: String, address: String, serial: String? = nil, peripheralUid: String? = nil, imageVersion: String, imageHash: String,
        imageBytes: Int, outcome: FirmwareUpdateOutcome, message: String? = nil, attempts: Int, startedAt: Int64, finishedAt: Int64
    ) {
        self.uid = uid
        self.address = address
        self.serial = serial
        self.peripheralUid = peripheralUid
        self.imageVersion = imageVersion
        self.imageHash = imageHash
        self.imageBytes = imageBytes
        self.outcome = outcome
        self.message = message
        self.attempts = attempts
        self.startedAt = startedAt
        self.finishedAt = finishedAt
    }

    /// The device runs the update's image after it: the firmware version the registry records.
    public var deviceRunsImage: Bool { outcome.deviceRunsImage }

    /// The rules the gateway's journal keeps (`FirmwareUpdateJournal.finish`: the message printable and cut to 1024
    /// bytes, the finish never before the start), checked again on the server: `nil` when valid.
    public var problem: String? {
        if !Self.isLowercaseUUID(uid) { return "uid must be a lowercase UUID" }
        if !Self.isAddress(address) { return "address must be AA:BB:CC:DD:EE:FF in uppercase hex" }
        if let serial, !EntityIdentity.isValidSerial(serial) { return "serial must be 1 to 32 printable ASCII characters" }
        if let peripheralUid, !Self.isLowercaseUUID(peripheralUid) { return "peripheralUid must be a lowercase UUID" }
        if imageVersion.isEmpty || imageVersion.utf8.count > 64 { return "imageVersion must be 1 to 64 bytes" }
        if imageHash.utf8.count != 64 || !imageHash.utf8.allSatisfy(Self.isLowercaseHexDigit) { return "imageHash must be 64 lowercase hex digits" }
        if imageBytes <= 0 { return "imageBytes must be positive" }
        if let message, message.utf8.count > 1024 { return "message must be at most 1024 bytes" }
        // PostgreSQL's jsonb cannot hold U+0000.
        if let message, message.unicodeScalars.contains("\u{0}") { return "message must not contain NUL" }
        if imageVersion.unicodeScalars.contains("\u{0}") { return "imageVersion must not contain NUL" }
        if attempts < 1 { return "attempts must be at least 1" }
        if startedAt < 0 || finishedAt < startedAt { return "finishedAt must not be before startedAt, nor startedAt negative" }
        return nil
    }

    static func isLowercaseUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !isLowercaseHexDigit(byte) {
                return false
            }
        }
        return true
    }

    private static func isAddress(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 17 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index % 3 == 2 {
                guard byte == UInt8(ascii: ":") else { return false }
            } else if !((0x30...0x39).contains(byte) || (0x41...0x46).contains(byte)) {
                return false
            }
        }
        return true
    }

    private static func isLowercaseHexDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) }

    // Absent values are written as null, as the gateway writes them, so documents compare byte for byte.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uid, forKey: .uid)
        try container.encode(address, forKey: .address)
        try container.encode(serial, forKey: .serial)
        try container.encode(peripheralUid, forKey: .peripheralUid)
        try container.encode(imageVersion, forKey: .imageVersion)
        try container.encode(imageHash, forKey: .imageHash)
        try container.encode(imageBytes, forKey: .imageBytes)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(message, forKey: .message)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(finishedAt, forKey: .finishedAt)
    }
}

/// How an update ended (the gateway journal's outcomes, docs/design/ota.md).
public enum FirmwareUpdateOutcome: String, Codable, Hashable, Sendable, CaseIterable {
    /// The new image runs, confirmed: permanent.
    case confirmed
    /// The new image runs on test, as asked: MCUboot reverts it at the next reset unless it is confirmed.
    case runningInTest = "running-in-test"
    /// The device already ran the image, confirmed: nothing was sent.
    case alreadyRunning = "already-running"
    /// The device came back on another image.
    case reverted
    /// The device stopped answering, refused a request, or the link could not be had.
    case failed
    /// A technician cancelled it.
    case cancelled

    /// The device runs the update's image after an update that ended so.
    public var deviceRunsImage: Bool {
        switch self {
        case .confirmed, .runningInTest, .alreadyRunning: true
        case .reverted, .failed, .cancelled: false
        }
    }
}
