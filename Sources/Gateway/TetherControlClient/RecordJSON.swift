import DBus
import Foundation

/// The JSON form of control-API records for `--json`: keys and value types as docs/specs/control-api.md names them
/// (times stay UTC nanoseconds, so scripts see exactly what the daemon sent), keys sorted for stable output.
public enum RecordJSON {
    public static func object(_ record: GatewayRecord) -> [String: Any] {
        record.fields.mapValues(value)
    }

    /// One value: integers as numbers, `ay` as an array of numbers, variants unwrapped, `a{s*}` as objects.
    public static func value(_ value: DBusValue) -> Any {
        switch value.unwrappingVariants {
        case .byte(let v): return Int(v)
        case .bool(let v): return v
        case .int16(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int64(let v): return v
        case .uint64(let v): return v
        case .double(let v): return v
        case .string(let v): return v
        case .objectPath(let v): return v.rawValue
        case .signature(let v): return v.rawValue
        case .unixFD: return NSNull()
        case .array(_, let elements): return elements.map { Self.value($0) }
        case .dictionary(_, _, let entries):
            var object: [String: Any] = [:]
            for entry in entries { object[String(describing: Self.value(entry.key))] = Self.value(entry.value) }
            return object
        case .structure(let fields): return fields.map { Self.value($0) }
        case .variant(let inner): return Self.value(inner)
        }
    }

    /// Pretty-printed JSON text (one document) with sorted keys.
    public static func text(_ object: Any, pretty: Bool = true) -> String {
        var options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]
        if pretty { options.insert(.prettyPrinted) }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: options) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    public static func text(_ record: GatewayRecord, pretty: Bool = true) -> String {
        text(object(record), pretty: pretty)
    }

    public static func text(_ records: [GatewayRecord], pretty: Bool = true) -> String {
        text(records.map(object), pretty: pretty)
    }
}
