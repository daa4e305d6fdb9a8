import DBus
import Foundation
import TetherControlClient

/// How records read in tables: times as UTC, ages and durations in the largest sensible unit, absent values as "-".
/// control-api.md: times are UTC nanoseconds since the Unix epoch, durations nanoseconds.
enum RecordFormatting {
    static let absent = "-"

    static func time(_ nanoseconds: Int64?) -> String {
        guard let nanoseconds, nanoseconds > 0 else { return absent }
        let date = Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02dZ", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0,
            parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
    }

    static func duration(_ nanoseconds: Int64?) -> String {
        guard let nanoseconds else { return absent }
        let sign = nanoseconds < 0 ? "-" : ""
        let magnitude = nanoseconds.magnitude
        if magnitude < 1_000_000 { return "\(sign)\(magnitude / 1000) µs" }
        if magnitude < 1_000_000_000 { return "\(sign)\(magnitude / 1_000_000) ms" }
        let seconds = magnitude / 1_000_000_000
        if seconds < 120 { return "\(sign)\(seconds) s" }
        if seconds < 7200 { return "\(sign)\(seconds / 60) min" }
        if seconds < 172_800 { return "\(sign)\(seconds / 3600) h" }
        return "\(sign)\(seconds / 86400) d"
    }

    static func bytes(_ count: Int64?) -> String {
        guard let count else { return absent }
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func flag(_ value: Bool?) -> String {
        value.map { $0 ? "yes" : "no" } ?? absent
    }

    static func number(_ value: Int64?) -> String {
        value.map(String.init) ?? absent
    }

    /// Any value, for key/value listings (settings, conflicts).
    static func value(_ value: DBusValue?) -> String {
        guard let value = value?.unwrappingVariants else { return absent }
        switch value {
        case .string(let string): return string
        case .bool(let bool): return bool ? "true" : "false"
        case .byte(let v): return String(v)
        case .int16(let v): return String(v)
        case .uint16(let v): return String(v)
        case .int32(let v): return String(v)
        case .uint32(let v): return String(v)
        case .int64(let v): return String(v)
        case .uint64(let v): return String(v)
        case .double(let v): return String(v)
        default: return RecordJSON.text(RecordJSON.value(value), pretty: false)
        }
    }
}
