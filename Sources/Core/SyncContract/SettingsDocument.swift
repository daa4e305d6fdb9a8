import TetherSettings

/// Device settings on the wire: the JSON of LinkProtocol's `DeviceSettings` (named known settings, `unknown`
/// TLV records kept as they came), read leniently (every field optional, `unknown` too) and validated apart from
/// decoding, so a bad value is a reason a command is rejected rather than a request that cannot be read.
public struct SettingsDocument: Codable, Hashable, Sendable {
    public var sensitivity: Int?
    public var ledBrightness: Int?
    public var hapticFeedback: Bool?
    public var sleepTimeoutSeconds: Int?
    public var dailyLimit: Int?
    public var unknown: [UnknownSetting]

    public struct UnknownSetting: Codable, Hashable, Sendable {
        public var key: Int
        public var value: [Int]

        public init(key: Int, value: [Int]) {
            self.key = key
            self.value = value
        }
    }

    enum CodingKeys: String, CodingKey {
        case sensitivity, ledBrightness, hapticFeedback, sleepTimeoutSeconds, dailyLimit, unknown
    }

    public init(
        sensitivity: Int? = nil, ledBrightness: Int? = nil, hapticFeedback: Bool? = nil, sleepTimeoutSeconds: Int? = nil,
        dailyLimit: Int? = nil, unknown: [UnknownSetting] = []
    ) {
        self.sensitivity = sensitivity
        self.ledBrightness = ledBrightness
        self.hapticFeedback = hapticFeedback
        self.sleepTimeoutSeconds = sleepTimeoutSeconds
        self.dailyLimit = dailyLimit
        self.unknown = unknown
    }

    public init(_ settings: DeviceSettings) {
        self.init(
            sensitivity: settings.sensitivity.map(Int.init), ledBrightness: settings.ledBrightness.map(Int.init),
            hapticFeedback: settings.hapticFeedback, sleepTimeoutSeconds: settings.sleepTimeoutSeconds.map(Int.init),
            dailyLimit: settings.dailyLimit.map(Int.init),
            unknown: settings.unknown.map { UnknownSetting(key: Int($0.key), value: $0.value.map(Int.init)) })
    }

    /// Every field may be left out; none may be null (a setting is either wanted or not mentioned).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func optional<T: Decodable>(_ type: T.Type, _ key: CodingKeys) throws -> T? {
            container.contains(key) ? try container.decode(T.self, forKey: key) : nil
        }
        sensitivity = try optional(Int.self, .sensitivity)
        ledBrightness = try optional(Int.self, .ledBrightness)
        hapticFeedback = try optional(Bool.self, .hapticFeedback)
        sleepTimeoutSeconds = try optional(Int.self, .sleepTimeoutSeconds)
        dailyLimit = try optional(Int.self, .dailyLimit)
        unknown = try optional([UnknownSetting].self, .unknown) ?? []
    }

    /// The validated settings; throws the first bad value (§7.11 ranges, byte-sized keys and values).
    public func settings() throws(SettingsDocumentError) -> DeviceSettings {
        var records: [SettingRecord] = []
        func byte(_ value: Int, _ key: UInt8) throws(SettingsDocumentError) -> UInt8 {
            guard let byte = UInt8(exactly: value) else { throw SettingsDocumentError(reason: "setting \(key): \(value) is not a byte") }
            return byte
        }
        func word(_ value: Int, _ key: UInt8) throws(SettingsDocumentError) -> [UInt8] {
            guard let word = UInt16(exactly: value) else { throw SettingsDocumentError(reason: "setting \(key): \(value) is outside 0…65535") }
            return [UInt8(truncatingIfNeeded: word), UInt8(truncatingIfNeeded: word >> 8)]
        }
        if let sensitivity { records.append(SettingRecord(key: DeviceSettings.Key.sensitivity, value: [try byte(sensitivity, DeviceSettings.Key.sensitivity)])) }
        if let ledBrightness { records.append(SettingRecord(key: DeviceSettings.Key.ledBrightness, value: [try byte(ledBrightness, DeviceSettings.Key.ledBrightness)])) }
        if let hapticFeedback { records.append(SettingRecord(key: DeviceSettings.Key.hapticFeedback, value: [hapticFeedback ? 1 : 0])) }
        if let sleepTimeoutSeconds {
            records.append(SettingRecord(key: DeviceSettings.Key.sleepTimeoutSeconds, value: try word(sleepTimeoutSeconds, DeviceSettings.Key.sleepTimeoutSeconds)))
        }
        if let dailyLimit { records.append(SettingRecord(key: DeviceSettings.Key.dailyLimit, value: try word(dailyLimit, DeviceSettings.Key.dailyLimit))) }
        var seen = Set(records.map(\.key))
        for setting in unknown {
            guard let key = UInt8(exactly: setting.key), key > DeviceSettings.Key.dailyLimit else {
                throw SettingsDocumentError(reason: "unknown setting key \(setting.key) must be a byte above the known keys (1…5)")
            }
            guard seen.insert(key).inserted else { throw SettingsDocumentError(reason: "setting \(key) appears twice") }
            guard setting.value.count <= 255 else { throw SettingsDocumentError(reason: "setting \(key): a value holds at most 255 bytes") }
            var value: [UInt8] = []
            for element in setting.value {
                guard let byte = UInt8(exactly: element) else { throw SettingsDocumentError(reason: "setting \(key): \(element) is not a byte") }
                value.append(byte)
            }
            records.append(SettingRecord(key: key, value: value))
        }
        do {
            return try DeviceSettings(records: records)
        } catch {
            throw SettingsDocumentError(reason: error.description)
        }
    }

    /// `nil` when `settings()` succeeds.
    public var problem: String? {
        do {
            _ = try settings()
            return nil
        } catch {
            return error.reason
        }
    }

    /// TLV key → value bytes in key order (the page checksum's canonical form); `nil` when invalid.
    public var canonicalRecords: [(key: UInt8, value: [UInt8])]? {
        guard let settings = try? settings() else { return nil }
        return settings.records.map { ($0.key, $0.value) }.sorted { $0.key < $1.key }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(sensitivity, forKey: .sensitivity)
        try container.encodeIfPresent(ledBrightness, forKey: .ledBrightness)
        try container.encodeIfPresent(hapticFeedback, forKey: .hapticFeedback)
        try container.encodeIfPresent(sleepTimeoutSeconds, forKey: .sleepTimeoutSeconds)
        try container.encodeIfPresent(dailyLimit, forKey: .dailyLimit)
        try container.encode(unknown, forKey: .unknown)
    }
}

public struct SettingsDocumentError: Error, Hashable, Sendable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}
