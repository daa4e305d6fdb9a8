import DBus
import TetherControlClient
import ControlContract

/// Turns `NAME=VALUE` text into the typed value a setting takes.
///
/// control-api.md, Settings: "value types follow the setting (u for intervals and thresholds, b for switches, s for
/// names)". The CLI does not hard-code the settings: it reads the device's current record and converts each value
/// to the type of `desired.NAME` there, so a setting added to the daemon works without a new CLI.
enum SettingValue {
    struct Problem: Error, Equatable {
        let message: String
    }

    /// Splits `NAME=VALUE`.
    static func assignment(_ text: String) throws -> (name: String, value: String) {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
            throw Problem(message: "'\(text)' is not NAME=VALUE")
        }
        return (String(text[..<equals]), String(text[text.index(after: equals)...]))
    }

    /// The names that can be set: the record's `desired.*` keys without the prefix, plus the contract's settings.
    static func names(in fields: [String: DBusValue]) -> [String] {
        let offered = fields.keys.filter { $0.hasPrefix("desired.") }.map { String($0.dropFirst("desired.".count)) }
        return Set(offered + GatewayContract.settingTypes.keys).sorted()
    }

    /// A value of the type `name` takes: the record's desired value, else its reported one (unless it is a raw
    /// `reported.key<N>`, which control-api.md says "cannot be set"), else the contract's table.
    static func example(of name: String, in fields: [String: DBusValue]) -> DBusValue? {
        fields["desired.\(name)"] ?? (name.hasPrefix("key") ? nil : fields["reported.\(name)"])
            ?? GatewayContract.settingTypes[name]
    }

    /// `text` converted to the type of `current` (the setting's present desired value).
    static func parse(_ text: String, name: String, like current: DBusValue) throws -> DBusValue {
        func integer<T: FixedWidthInteger>(_ type: T.Type, _ wrap: (T) -> DBusValue) throws -> DBusValue {
            guard let value = T(text) else {
                throw Problem(message: "\(name) takes a whole number from \(T.min) to \(T.max), not '\(text)'")
            }
            return wrap(value)
        }
        switch current.unwrappingVariants {
        case .bool:
            switch text.lowercased() {
            case "true", "on", "yes", "1": return .bool(true)
            case "false", "off", "no", "0": return .bool(false)
            default: throw Problem(message: "\(name) is a switch: give on or off (true/false), not '\(text)'")
            }
        case .string: return .string(text)
        case .byte: return try integer(UInt8.self) { .byte($0) }
        case .uint16: return try integer(UInt16.self) { .uint16($0) }
        case .uint32: return try integer(UInt32.self) { .uint32($0) }
        case .uint64: return try integer(UInt64.self) { .uint64($0) }
        case .int16: return try integer(Int16.self) { .int16($0) }
        case .int32: return try integer(Int32.self) { .int32($0) }
        case .int64: return try integer(Int64.self) { .int64($0) }
        case .double:
            guard let value = Double(text), value.isFinite else {
                throw Problem(message: "\(name) takes a number, not '\(text)'")
            }
            return .double(value)
        default:
            throw Problem(message: "\(name) has a type this tether cannot set (\(current.signature.rawValue))")
        }
    }
}
