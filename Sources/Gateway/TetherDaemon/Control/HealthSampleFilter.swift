import DBus
import TetherGateway
import TetherPrimitives
import TetherStore

/// The `a{sv}` arguments of the health methods (docs/specs/control-api.md, "Health sample", "Health change") read
/// into store terms. An unknown key or a value of the wrong type is refused by name: a filter silently ignored would
/// show a technician the wrong readings.
enum HealthSampleFilter {
    /// `ListHealthSamples`' query: `since` x, `until` x (UTC nanoseconds), `metric` s (a metric name), `metric_code`
    /// u, `include_deleted` b, `limit` u (0: 100, at most 10000).
    static func query(_ fields: [String: DBusValue]) throws(DBusError) -> HealthSampleQuery {
        var query = HealthSampleQuery(limit: GatewayControl.limit(0))
        for (key, wrapped) in fields.sorted(by: { $0.key < $1.key }) {
            let value = wrapped.unwrappingVariants
            switch key {
            case "since", "until":
                guard let nanoseconds = value.int64Value, nanoseconds >= 0 else {
                    throw ControlError.invalidArgument("\(key) must be UTC nanoseconds since 1970 (type x, not negative)")
                }
                if key == "since" { query.from = Timestamp(nanoseconds: nanoseconds) } else { query.until = Timestamp(nanoseconds: nanoseconds) }
            case "metric":
                guard let name = value.stringValue else { throw ControlError.invalidArgument("metric must be a string (type s)") }
                guard let codes = HealthLiveReading.metricCodes(named: name) else {
                    throw ControlError.invalidArgument("Unknown metric \"\(name)\"; known: \(HealthLiveReading.metricNames.joined(separator: ", "))")
                }
                query.metricCodes = intersect(query.metricCodes, codes)
            case "metric_code":
                guard let code = value.uint32Value else { throw ControlError.invalidArgument("metric_code must be an MDC code (type u)") }
                query.metricCodes = intersect(query.metricCodes, [Int(code)])
            case "include_deleted":
                guard let flag = value.boolValue else { throw ControlError.invalidArgument("include_deleted must be a boolean (type b)") }
                query.includeDeleted = flag
            case "limit":
                guard let limit = value.uint32Value else { throw ControlError.invalidArgument("limit must be a count (type u)") }
                query.limit = GatewayControl.limit(limit)
            default:
                throw ControlError.invalidArgument(
                    "Unknown sample filter \"\(key)\"; known: since, until, metric, metric_code, include_deleted, limit")
            }
        }
        if let from = query.from, let until = query.until, until <= from {
            throw ControlError.invalidArgument("until must be later than since")
        }
        return query
    }

    /// `CorrectHealthSample`'s correction: `value` s (an exact decimal in the sample's reported unit), `user_index` u.
    static func correction(_ fields: [String: DBusValue]) throws(DBusError) -> HealthCorrection {
        var correction = HealthCorrection()
        for (key, wrapped) in fields.sorted(by: { $0.key < $1.key }) {
            let value = wrapped.unwrappingVariants
            switch key {
            case "value":
                guard let text = value.stringValue, let decimal = HealthDecimal(text) else {
                    throw ControlError.invalidArgument("value must be a plain decimal numeral in the sample's unit (\"120\", \"5.4\"), as text (type s)")
                }
                correction.value = decimal
            case "user_index":
                guard let index = value.uint32Value else { throw ControlError.invalidArgument("user_index must be a number (type u)") }
                correction.userIndex = Int(index)
            default:
                throw ControlError.invalidArgument("Unknown correction field \"\(key)\"; known: value, user_index")
            }
        }
        return correction
    }

    private static func intersect(_ current: [Int]?, _ codes: [Int]) -> [Int] {
        guard let current else { return codes }
        return current.filter(codes.contains)
    }
}
