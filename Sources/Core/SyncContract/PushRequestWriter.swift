import Foundation
import TetherPrimitives

/// Writes a push body from commands whose payloads are already JSON text (the gateway's outbox stores them so):
/// the payload goes in as is, so a batch of a thousand commands costs string appends rather than a parse and a
/// re-encode of every payload. The output is the same document `PushRequest` encodes.
public struct PushRequestWriter {
    private var bytes: [UInt8] = []
    private var count = 0

    public init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
        bytes.append(contentsOf: #"{"commands":["#.utf8)
    }

    public var commandCount: Int { count }
    public var byteCount: Int { bytes.count + 2 }

    /// `payloadJSON` must be one JSON object (the outbox's CHECK (json_valid(payload)) guarantees JSON).
    public mutating func append(id: UUID, entityType: String, entityID: String, operation: String, payloadJSON: String, baseVersion: Int64? = nil) {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        bytes.append(contentsOf: #"{"id":""#.utf8)
        bytes.append(contentsOf: id.uuidString.lowercased().utf8)
        bytes.append(contentsOf: #"","entity_type":"#.utf8)
        JSONString.append(entityType, to: &bytes)
        bytes.append(contentsOf: #","entity_id":"#.utf8)
        JSONString.append(entityID, to: &bytes)
        bytes.append(contentsOf: #","operation":"#.utf8)
        JSONString.append(operation, to: &bytes)
        bytes.append(contentsOf: #","payload":"#.utf8)
        bytes.append(contentsOf: payloadJSON.utf8)
        if let baseVersion {
            bytes.append(contentsOf: #","base_version":"#.utf8)
            bytes.append(contentsOf: String(baseVersion).utf8)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    public func finish() -> [UInt8] { bytes + Array("]}".utf8) }
}

/// RFC 8259 §7 string quoting: quote, backslash and control characters escaped, everything else as UTF-8.
public enum JSONString {
    public static func append(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20: bytes.append(contentsOf: "\\u00\(Hex.byte(byte))".utf8)
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
