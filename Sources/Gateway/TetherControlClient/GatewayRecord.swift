import DBus
import ControlContract

/// One `a{sv}` record of the control API (status, device, scan result, settings, outbox command, conflict).
///
/// control-api.md: "Records are a{sv} dictionaries so fields can be added without breaking clients" and "a field
/// that has no value is left out". So every accessor is optional and unknown fields are kept for `--json`.
public struct GatewayRecord: Sendable, Hashable {
    public let fields: [String: DBusValue]

    public init(_ fields: [String: DBusValue]) {
        self.fields = fields
    }

    /// Reads an `a{sv}` reply value; anything else is a contract violation by the daemon.
    init(replyValue value: DBusValue, method: GatewayMethod) throws {
        guard let fields = value.variantDictionaryValue else {
            throw GatewayControlError.unexpectedReply(method: method.rawValue, signature: value.signature.rawValue)
        }
        self.fields = fields
    }

    public subscript(key: String) -> DBusValue? { fields[key] }

    public func string(_ key: String) -> String? { fields[key]?.unwrappingVariants.stringValue }
    public func bool(_ key: String) -> Bool? { fields[key]?.unwrappingVariants.boolValue }

    /// Any unsigned or signed integer field widened to Int64 (UInt64 beyond Int64.max is clamped).
    public func integer(_ key: String) -> Int64? {
        guard let value = fields[key]?.unwrappingVariants else { return nil }
        switch value {
        case .byte(let v): return Int64(v)
        case .int16(let v): return Int64(v)
        case .uint16(let v): return Int64(v)
        case .int32(let v): return Int64(v)
        case .uint32(let v): return Int64(v)
        case .int64(let v): return v
        case .uint64(let v): return Int64(clamping: v)
        default: return nil
        }
    }

    public func double(_ key: String) -> Double? { fields[key]?.unwrappingVariants.doubleValue }

    /// The keys in sorted order, for stable output.
    public var sortedKeys: [String] { fields.keys.sorted() }
}
