/// A JSON value for the FHIR export, written by hand so that a FHIR `decimal` goes out as the exact numeral it was
/// stored as. FHIR R4 §2.6.2 (JSON representation): a decimal is a JSON number whose digits carry its precision
/// ("1.0" and "1.00" differ), so it must never pass through a binary float; Foundation's JSONEncoder has no way to
/// write a number from its text. Keys keep their insertion order (FHIR's JSON examples put `resourceType` first).
public indirect enum FHIRJSON: Hashable, Sendable {
    case object([(String, FHIRJSON)])
    case array([FHIRJSON])
    case string(String)
    /// A JSON number written exactly as this text; `FHIRJSON.decimal(_:)` makes one only from a valid numeral.
    case number(String)
    case bool(Bool)

    /// `text` as a JSON number, when it is a FHIR decimal (R4 §2.24.0.1 decimal's regex
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`); `nil` otherwise.
    public static func decimal(_ text: String) -> FHIRJSON? { isFHIRDecimal(text) ? .number(text) : nil }

    public static func isFHIRDecimal(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        func digits() -> Int {
            var count = 0
            while let first = bytes.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) {
                bytes = bytes.dropFirst()
                count += 1
            }
            return count
        }
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let leading = bytes.first
        let integerDigits = digits()
        guard integerDigits > 0, !(leading == UInt8(ascii: "0") && integerDigits > 1) else { return false }
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            guard digits() > 0 else { return false }
        }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    public static func == (lhs: FHIRJSON, rhs: FHIRJSON) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let a), .array(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .object(let members):
            hasher.combine(0)
            for (key, value) in members {
                hasher.combine(key)
                hasher.combine(value)
            }
        case .array(let items): hasher.combine(1); hasher.combine(items)
        case .string(let text): hasher.combine(2); hasher.combine(text)
        case .number(let text): hasher.combine(3); hasher.combine(text)
        case .bool(let value): hasher.combine(4); hasher.combine(value)
        }
    }

    /// The member `key` of an object, for tests and callers that read back what they built.
    public subscript(key: String) -> FHIRJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// Compact UTF-8 JSON (RFC 8259).
    public var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                Self.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .string(let text): Self.writeString(text, to: &out)
        case .number(let text): out += text
        case .bool(let value): out += value ? "true" : "false"
        }
    }

    /// RFC 8259 §7: `"` and `\` escaped, control characters (U+0000–U+001F) as \uXXXX or their short forms.
    private static func writeString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
