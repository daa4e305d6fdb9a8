/// The device settings of link protocol §7.11 as values: the known keys and their ranges, TLV records, records of
/// unknown keys kept as they came. Their own module so that the sync contract and the backend can validate settings
/// without the link protocol; the link protocol's SET_CONFIG / CONFIG_DATA carry them (`DeviceConfig`).
/// One TLV record of §7.11.
public struct SettingRecord: Hashable, Sendable {
    public var key: UInt8
    public var value: [UInt8]

    public init(key: UInt8, value: [UInt8]) {
        self.key = key
        self.value = value
    }
}

/// The known settings of §7.11, with records of unknown keys kept as they came.
public struct DeviceSettings: Hashable, Sendable, Codable {
    public var sensitivity: UInt8?
    public var ledBrightness: UInt8?
    public var hapticFeedback: Bool?
    public var sleepTimeoutSeconds: UInt16?
    public var dailyLimit: UInt16?
    /// Records whose key this version does not know: preserved unchanged (§7.11).
    public var unknown: [UnknownSetting] = []

    public struct UnknownSetting: Hashable, Sendable, Codable {
        public var key: UInt8
        public var value: [UInt8]

        public init(key: UInt8, value: [UInt8]) {
            self.key = key
            self.value = value
        }
    }

    public struct InvalidSetting: Error, Hashable, Sendable, CustomStringConvertible {
        public var key: UInt8
        public var reason: String
        public var description: String { "setting \(key): \(reason)" }
    }

    public enum Key {
        public static let sensitivity: UInt8 = 1
        public static let ledBrightness: UInt8 = 2
        public static let hapticFeedback: UInt8 = 3
        public static let sleepTimeoutSeconds: UInt8 = 4
        public static let dailyLimit: UInt8 = 5
    }

    /// §7.11 ranges.
    public static let sensitivityRange: ClosedRange<UInt8> = 1...10
    public static let ledBrightnessRange: ClosedRange<UInt8> = 0...100
    public static let sleepTimeoutRange: ClosedRange<UInt16> = 10...3600
    public static let dailyLimitRange: ClosedRange<UInt16> = 0...1000

    public init(
        sensitivity: UInt8? = nil, ledBrightness: UInt8? = nil, hapticFeedback: Bool? = nil,
        sleepTimeoutSeconds: UInt16? = nil, dailyLimit: UInt16? = nil
    ) {
        self.sensitivity = sensitivity
        self.ledBrightness = ledBrightness
        self.hapticFeedback = hapticFeedback
        self.sleepTimeoutSeconds = sleepTimeoutSeconds
        self.dailyLimit = dailyLimit
    }

    public init(records: [SettingRecord]) throws(InvalidSetting) {
        for record in records {
            switch record.key {
            case Key.sensitivity: sensitivity = try Self.byte(record, in: Self.sensitivityRange)
            case Key.ledBrightness: ledBrightness = try Self.byte(record, in: Self.ledBrightnessRange)
            case Key.hapticFeedback: hapticFeedback = try Self.byte(record, in: 0...1) == 1
            case Key.sleepTimeoutSeconds: sleepTimeoutSeconds = try Self.word(record, in: Self.sleepTimeoutRange)
            case Key.dailyLimit: dailyLimit = try Self.word(record, in: Self.dailyLimitRange)
            default: unknown.append(UnknownSetting(key: record.key, value: record.value))
            }
        }
    }

    /// Checks every known value against §7.11; the first bad key is named.
    public func validate() throws(InvalidSetting) {
        _ = try DeviceSettings(records: records)
    }

    /// The TLV records, known keys first in key order, then unknown ones as received.
    public var records: [SettingRecord] {
        var records: [SettingRecord] = []
        if let sensitivity { records.append(SettingRecord(key: Key.sensitivity, value: [sensitivity])) }
        if let ledBrightness { records.append(SettingRecord(key: Key.ledBrightness, value: [ledBrightness])) }
        if let hapticFeedback { records.append(SettingRecord(key: Key.hapticFeedback, value: [hapticFeedback ? 1 : 0])) }
        if let sleepTimeoutSeconds { records.append(SettingRecord(key: Key.sleepTimeoutSeconds, value: Self.bytes(sleepTimeoutSeconds))) }
        if let dailyLimit { records.append(SettingRecord(key: Key.dailyLimit, value: Self.bytes(dailyLimit))) }
        records += unknown.map { SettingRecord(key: $0.key, value: $0.value) }
        return records
    }

    /// `other`'s values where it has them, this one's elsewhere.
    public func overlaid(with other: DeviceSettings) -> DeviceSettings {
        var merged = self
        merged.sensitivity = other.sensitivity ?? sensitivity
        merged.ledBrightness = other.ledBrightness ?? ledBrightness
        merged.hapticFeedback = other.hapticFeedback ?? hapticFeedback
        merged.sleepTimeoutSeconds = other.sleepTimeoutSeconds ?? sleepTimeoutSeconds
        merged.dailyLimit = other.dailyLimit ?? dailyLimit
        for setting in other.unknown {
            merged.unknown.removeAll { $0.key == setting.key }
            merged.unknown.append(setting)
        }
        return merged
    }

    private static func byte(_ record: SettingRecord, in range: ClosedRange<UInt8>) throws(InvalidSetting) -> UInt8 {
        guard record.value.count == 1 else { throw InvalidSetting(key: record.key, reason: "expected 1 byte, got \(record.value.count)") }
        guard range.contains(record.value[0]) else {
            throw InvalidSetting(key: record.key, reason: "\(record.value[0]) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        return record.value[0]
    }

    private static func word(_ record: SettingRecord, in range: ClosedRange<UInt16>) throws(InvalidSetting) -> UInt16 {
        guard record.value.count == 2 else { throw InvalidSetting(key: record.key, reason: "expected 2 bytes, got \(record.value.count)") }
        let value = UInt16(record.value[0]) | UInt16(record.value[1]) << 8
        guard range.contains(value) else {
            throw InvalidSetting(key: record.key, reason: "\(value) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }

    private static func bytes(_ value: UInt16) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }
}
