import Foundation
import HealthProfiles

/// The outcome of `tether health decode`: decoded fields and samples, or the reason the bytes were refused; rendered
/// as text or JSON.
struct HealthDecodeReport: Encodable {
    let valid: Bool
    let characteristic: String
    let name: String
    let bytes: String
    let parserVersion: Int
    let reason: String?
    let error: ErrorDetail?
    let fields: AnyEncodable?
    let observations: [HealthObservation]?

    struct ErrorDetail: Encodable {
        let code: String
        let field: String
        let offset: Int
    }

    static func make(target: HealthDecodeTarget, bytes: [UInt8]) -> HealthDecodeReport {
        let hex = bytes.map { String(format: "%02X", $0) }.joined()
        func refused(_ id: String, _ name: String, _ reason: String, _ error: ErrorDetail?) -> HealthDecodeReport {
            HealthDecodeReport(
                valid: false, characteristic: id, name: name, bytes: hex, parserVersion: HealthDecoder.parserVersion, reason: reason,
                error: error, fields: nil, observations: nil)
        }
        switch target {
        case .sfloat, .float:
            let width = target == .sfloat ? 2 : 4
            let id = target == .sfloat ? "sfloat" : "float"
            let name = target == .sfloat ? "IEEE 11073-20601 SFLOAT" : "IEEE 11073-20601 FLOAT"
            guard bytes.count == width else { return refused(id, name, "\(id) takes exactly \(width) bytes, not \(bytes.count)", nil) }
            let raw = bytes.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }  // little-endian on the wire
            let value = target == .sfloat ? MedicalFloat.sfloat(UInt16(raw)) : MedicalFloat.float(raw)
            return HealthDecodeReport(
                valid: true, characteristic: id, name: name, bytes: hex, parserVersion: HealthDecoder.parserVersion, reason: nil,
                error: nil, fields: AnyEncodable(value), observations: [])
        case .characteristic(let characteristic):
            do {
                let value = try HealthDecoder.decode(characteristic: characteristic, bytes: bytes)
                return HealthDecodeReport(
                    valid: true, characteristic: characteristic.shortUUID, name: characteristic.name, bytes: hex,
                    parserVersion: HealthDecoder.parserVersion, reason: nil, error: nil, fields: AnyEncodable(value.fields),
                    observations: value.observations)
            } catch {
                return refused(
                    characteristic.shortUUID, characteristic.name, error.description,
                    ErrorDetail(code: error.code.rawValue, field: error.field, offset: error.offset))
            }
        }
    }

    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// Human output: a heading, the decoded fields one per line (dotted paths), and the samples as a table.
    func text() -> String {
        var lines = ["\(name) (\(characteristic)), \(bytes.count / 2) bytes, parser version \(parserVersion)"]
        guard valid else {
            lines.append("refused: \(reason ?? "")")
            return lines.joined(separator: "\n")
        }
        if let fields, let data = try? Self.fieldEncoder.encode(fields),
           let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) {
            lines.append("fields:")
            lines += Self.flatten(object, path: "").map { "  \($0.0)  \($0.1)" }
        }
        if let observations, !observations.isEmpty {
            lines.append("samples the gateway would store:")
            var table = TextTable("METRIC", "MDC", "STATUS", "VALUE", "UNIT", "CANONICAL", "TIME", "USER", "SEQ", "NOTE")
            for observation in observations {
                let canonical = observation.canonicalValue.map { "\($0.value) \(observation.canonicalUnit.ucum)\($0.isExact ? "" : " (rounded)")" } ?? "-"
                let time: String = switch observation.time {
                case .deviceClock(let time): time.description
                case .minutesSinceSessionStart(let minutes): "session +\(minutes) min"
                case .notSupplied: "receipt"
                }
                var note = observation.qualifier ?? ""
                if observation.isIntermediate { note = note.isEmpty ? "intermediate: never stored" : "\(note); intermediate: never stored" }
                table.add([
                    observation.metric.rawValue, observation.mdcCode.map(String.init) ?? "-", observation.value.status.rawValue,
                    observation.value.decimal?.description ?? "-", observation.reportedUnit.ucum, canonical, time,
                    observation.userIndex.map(String.init) ?? "-", observation.sequenceNumber.map(String.init) ?? "-", note,
                ])
            }
            lines += table.lines.map { "  " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    private static var fieldEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    private static func flatten(_ value: Any, path: String) -> [(String, String)] {
        if let dictionary = value as? [String: Any] {
            return dictionary.sorted { $0.key < $1.key }.flatMap { flatten($0.value, path: path.isEmpty ? $0.key : "\(path).\($0.key)") }
        }
        if let array = value as? [Any] {
            if array.allSatisfy({ !($0 is [String: Any]) && !($0 is [Any]) }) {
                return [(path, "[" + array.map { scalar($0) }.joined(separator: ", ") + "]")]
            }
            return array.enumerated().flatMap { flatten($0.element, path: "\(path)[\($0.offset)]") }
        }
        return [(path.isEmpty ? "value" : path, scalar(value))]
    }

    private static func scalar(_ value: Any) -> String {
        // JSONSerialization gives true/false as NSNumber of C type char ("c"), numbers as integers or doubles.
        if let number = value as? NSNumber, ["c", "B"].contains(String(cString: number.objCType)) { return number.boolValue ? "true" : "false" }
        return "\(value)"
    }
}

/// An `Encodable` of any type, for the decoded fields of whichever characteristic it was.
struct AnyEncodable: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}
