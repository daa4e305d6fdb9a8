import LinkProtocol
import TetherSettings

/// One setting changed differently on both sides since the last sync. Values are the TLV value bytes of §7.11
/// (`nil`: the side does not have the setting), so unknown keys merge and conflict like known ones.
public struct SettingConflict: Codable, Hashable, Sendable, CustomStringConvertible {
    public var key: UInt8
    public var base: [UInt8]?
    public var desired: [UInt8]?
    public var reported: [UInt8]?
    /// When the conflict was found (nanoseconds since the Unix epoch).
    public var detectedAt: Int64

    public init(key: UInt8, base: [UInt8]?, desired: [UInt8]?, reported: [UInt8]?, detectedAt: Int64) {
        self.key = key
        self.base = base
        self.desired = desired
        self.reported = reported
        self.detectedAt = detectedAt
    }

    public var name: String { SettingsMerge.name(of: key) }

    public var description: String {
        func show(_ value: [UInt8]?) -> String { value.map(SettingsMerge.render) ?? "unset" }
        return "\(name): base \(show(base)), desired \(show(desired)), reported \(show(reported))"
    }
}

/// The three-way merge of desired settings (from the backend or a technician) with the device's reported ones,
/// against the base both last agreed on. Pure: no database, no clock.
public enum SettingsMerge {
    public struct Outcome: Hashable, Sendable {
        /// The desired settings after the merge: what to send with SET_CONFIG.
        public var settings: DeviceSettings
        /// Settings changed differently on both sides. Their desired value is held back (the device keeps its own)
        /// until someone resolves the conflict; nothing is silently dropped.
        public var conflicts: [SettingConflict]
    }

    /// Per setting, with `b` base, `d` desired, `r` reported:
    ///
    /// | case | result |
    /// |---|---|
    /// | `d` unset | unset: no opinion, the device keeps `r` |
    /// | no base yet (never synced) | `d`: the device's values are its initial state, not a change |
    /// | `d == b` (only the device changed it) | `r` |
    /// | `r == b` or `r` unset (only desired changed it) | `d` |
    /// | `d == r` (both changed it alike) | `d` |
    /// | otherwise | conflict, and `r` is kept |
    public static func merge(base: DeviceSettings?, desired: DeviceSettings, reported: DeviceSettings?, at now: Int64) throws(DeviceSettings.InvalidSetting) -> Outcome {
        let baseValues = base.map(values(of:))
        let desiredValues = values(of: desired)
        let reportedValues = reported.map(values(of:)) ?? [:]
        var merged: [UInt8: [UInt8]] = [:]
        var conflicts: [SettingConflict] = []
        for key in desiredValues.keys.sorted() {
            guard let d = desiredValues[key] else { continue }
            let r = reportedValues[key]
            guard let baseValues else {
                merged[key] = d
                continue
            }
            let b = baseValues[key]
            if d == b {
                merged[key] = r ?? d
            } else if r == nil || r == b || r == d {
                merged[key] = d
            } else {
                merged[key] = r
                conflicts.append(SettingConflict(key: key, base: b, desired: d, reported: r, detectedAt: now))
            }
        }
        return Outcome(settings: try settings(from: merged), conflicts: conflicts)
    }

    /// The settings as TLV key → value bytes (§7.11).
    public static func values(of settings: DeviceSettings) -> [UInt8: [UInt8]] {
        var values: [UInt8: [UInt8]] = [:]
        for record in settings.records { values[record.key] = record.value }
        return values
    }

    public static func settings(from values: [UInt8: [UInt8]]) throws(DeviceSettings.InvalidSetting) -> DeviceSettings {
        try DeviceSettings(records: values.keys.sorted().compactMap { key in values[key].map { SettingRecord(key: key, value: $0) } })
    }

    /// Whether every setting `desired` has, `reported` has with the same value.
    public static func isSatisfied(_ desired: DeviceSettings, by reported: DeviceSettings) -> Bool {
        let have = values(of: reported)
        return values(of: desired).allSatisfy { have[$0.key] == $0.value }
    }

    static func name(of key: UInt8) -> String {
        switch key {
        case DeviceSettings.Key.sensitivity: "sensitivity"
        case DeviceSettings.Key.ledBrightness: "ledBrightness"
        case DeviceSettings.Key.hapticFeedback: "hapticFeedback"
        case DeviceSettings.Key.sleepTimeoutSeconds: "sleepTimeoutSeconds"
        case DeviceSettings.Key.dailyLimit: "dailyLimit"
        default: "key\(key)"
        }
    }

    /// Little-endian integers for 1–2 byte values (every known setting), hex otherwise.
    static func render(_ value: [UInt8]) -> String {
        switch value.count {
        case 1: String(value[0])
        case 2: String(UInt16(value[0]) | UInt16(value[1]) << 8)
        default: value.map { String($0, radix: 16) }.joined(separator: " ")
        }
    }
}
