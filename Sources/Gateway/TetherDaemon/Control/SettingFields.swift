import DBus
import LinkProtocol
import TetherSettings

/// The device settings as the control API names and types them (docs/specs/control-api.md, "Settings"): link protocol
/// §7.11's known keys, `u` for numbers and `b` for switches. Unknown keys are shown as `key<N>` with their bytes
/// (`ay`) and cannot be set here.
enum SettingFields {
    struct Field: Sendable {
        let name: String
        let key: UInt8
        let read: @Sendable (DeviceSettings) -> DBusValue?
        /// Writes a D-Bus value; returns what is wrong with it, or nil.
        let write: @Sendable (inout DeviceSettings, DBusValue) -> String?
    }

    static let fields: [Field] = [
        Field(name: "sensitivity", key: DeviceSettings.Key.sensitivity, read: { $0.sensitivity.map { .uint32(UInt32($0)) } }) { settings, value in
            number(value, DeviceSettings.sensitivityRange) { settings.sensitivity = $0 }
        },
        Field(name: "led_brightness", key: DeviceSettings.Key.ledBrightness, read: { $0.ledBrightness.map { .uint32(UInt32($0)) } }) { settings, value in
            number(value, DeviceSettings.ledBrightnessRange) { settings.ledBrightness = $0 }
        },
        Field(name: "haptic_feedback", key: DeviceSettings.Key.hapticFeedback, read: { $0.hapticFeedback.map { .bool($0) } }) { settings, value in
            guard let flag = value.unwrappingVariants.boolValue else { return "expects a boolean (b)" }
            settings.hapticFeedback = flag
            return nil
        },
        Field(name: "sleep_timeout_seconds", key: DeviceSettings.Key.sleepTimeoutSeconds, read: { $0.sleepTimeoutSeconds.map { .uint32(UInt32($0)) } }) { settings, value in
            number(value, DeviceSettings.sleepTimeoutRange) { settings.sleepTimeoutSeconds = $0 }
        },
        Field(name: "daily_limit", key: DeviceSettings.Key.dailyLimit, read: { $0.dailyLimit.map { .uint32(UInt32($0)) } }) { settings, value in
            number(value, DeviceSettings.dailyLimitRange) { settings.dailyLimit = $0 }
        },
    ]

    static func name(of key: UInt8) -> String { fields.first { $0.key == key }?.name ?? "key\(key)" }

    /// `prefix.<name>` entries for every setting present.
    static func entries(_ settings: DeviceSettings, prefix: String) -> [String: DBusValue] {
        var entries: [String: DBusValue] = [:]
        for field in fields { if let value = field.read(settings) { entries["\(prefix).\(field.name)"] = value } }
        for unknown in settings.unknown { entries["\(prefix).key\(unknown.key)"] = .bytes(unknown.value) }
        return entries
    }

    /// The settings named in a `SetSettings` dictionary (names without the `desired.` prefix).
    static func parse(_ requested: [String: DBusValue]) throws(DBusError) -> DeviceSettings {
        var settings = DeviceSettings()
        for (name, value) in requested.sorted(by: { $0.key < $1.key }) {
            guard let field = fields.first(where: { $0.name == name }) else {
                let names = fields.map(\.name).joined(separator: ", ")
                throw ControlError.invalidArgument("Unknown setting \"\(name)\"; the settings are \(names)")
            }
            if let problem = field.write(&settings, value) {
                throw ControlError.invalidArgument("Setting \(name) \(problem)")
            }
        }
        return settings
    }

    /// The value of a conflict side (TLV bytes) in the setting's D-Bus type.
    static func value(key: UInt8, bytes: [UInt8]?) -> DBusValue? {
        guard let bytes else { return nil }
        if let settings = try? DeviceSettings(records: [SettingRecord(key: key, value: bytes)]),
            let field = fields.first(where: { $0.key == key }), let value = field.read(settings)
        {
            return value
        }
        return .bytes(bytes)
    }

    private static func number<T: FixedWidthInteger>(_ value: DBusValue, _ range: ClosedRange<T>, _ set: (T) -> Void) -> String? {
        let unwrapped = value.unwrappingVariants
        let number: Int64? = switch unwrapped {
        case .uint32(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .uint16(let v): Int64(v)
        case .int16(let v): Int64(v)
        case .byte(let v): Int64(v)
        case .uint64(let v): Int64(exactly: v)
        case .int64(let v): v
        default: nil
        }
        guard let number else { return "expects an unsigned integer (u)" }
        guard number >= Int64(range.lowerBound), number <= Int64(range.upperBound), let typed = T(exactly: number) else {
            return "must be within \(range.lowerBound)…\(range.upperBound), got \(number)"
        }
        set(typed)
        return nil
    }
}
