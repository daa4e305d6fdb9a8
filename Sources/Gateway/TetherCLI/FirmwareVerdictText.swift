import Foundation
import MCUbootImage
import TetherPrimitives

/// `tether firmware inspect`'s two renderings of an `ImageVerdict`: a table for people and one JSON object.
enum FirmwareVerdictText {
    static func table(_ verdict: ImageVerdict, file: String) -> String {
        var table = TextTable("", "")
        table.add(["image", file])
        if let parsed = verdict.image {
            let header = parsed.header
            table.add(["version", header.version.description])
            table.add(["header", "\(header.headerSize) bytes, load address 0x\(String(header.loadAddress, radix: 16))"
                + (header.flags.names.isEmpty ? "" : ", flags " + header.flags.names.joined(separator: " "))])
            table.add(["body", "\(header.imageSize) bytes"])
            table.add(["protected TLVs", parsed.protectedTLVs.isEmpty ? "none" : parsed.protectedTLVs.map { "\($0.type)" }.joined(separator: " ")])
            table.add(["TLVs", parsed.unprotectedTLVs.map { "\($0.type)" }.joined(separator: " ")])
            if parsed.trailingByteCount > 0 { table.add(["trailing", "\(parsed.trailingByteCount) bytes after the TLVs"]) }
        }
        if let counter = verdict.securityCounter { table.add(["security counter", "\(counter)"]) }
        if let hash = verdict.hashHex {
            let matches = verdict.statedHash != nil && verdict.statedHash == verdict.computedHash
            table.add(["SHA-256", hash + (verdict.statedHash == nil ? " (computed; no SHA256 TLV)" : matches ? " (matches)" : "")])
        }
        table.add(["signature", verdict.signatureType.map { "\($0)" } ?? "none"])
        table.add(["key", keyText(verdict.key)])
        table.add(["verdict", verdict.isVerified ? "VERIFIED" : "REFUSED: " + (verdict.refusal.map { "\($0)" } ?? "no trusted key")])
        return table.lines.dropFirst().joined(separator: "\n")
    }

    static func keyText(_ key: KeyVerdict) -> String {
        switch key {
        case .none: "none"
        case .trusted(let trusted): "trusted: \(trusted.name) (\(trusted.algorithm.rawValue), hash \(key.keyHashHex ?? ""))"
        case .untrusted: "untrusted (hash \(key.keyHashHex ?? ""))"
        }
    }

    static func json(_ verdict: ImageVerdict, file: String) -> String {
        var object: [String: Any] = ["file": file, "verified": verdict.isVerified]
        if let parsed = verdict.image {
            let header = parsed.header
            object["version"] = header.version.description
            object["header"] = [
                "load_address": Int(header.loadAddress), "header_size": Int(header.headerSize),
                "protected_tlv_size": Int(header.protectedTLVSize), "image_size": Int(header.imageSize),
                "flags": Int(header.flags.rawValue), "flag_names": header.flags.names,
            ] as [String: Any]
            object["tlvs"] = parsed.tlvs.map {
                ["type": Int($0.type.rawValue), "name": "\($0.type)", "length": $0.value.count, "protected": $0.isProtected] as [String: Any]
            }
            object["trailing_bytes"] = parsed.trailingByteCount
        }
        object["security_counter"] = verdict.securityCounter.map { Int($0) } ?? NSNull()
        object["hash"] = verdict.statedHash.map { Hex.encode($0) } ?? NSNull()
        object["computed_hash"] = verdict.computedHash.map { Hex.encode($0) } ?? NSNull()
        object["signature"] = verdict.signatureType.map { "\($0)" } ?? NSNull()
        var key: [String: Any] = ["hash": verdict.key.keyHashHex ?? NSNull()]
        switch verdict.key {
        case .none: key["status"] = "none"
        case .trusted(let trusted):
            key["status"] = "trusted"
            key["name"] = trusted.name
            key["algorithm"] = trusted.algorithm.rawValue
        case .untrusted: key["status"] = "untrusted"
        }
        object["key"] = key
        if let refusal = verdict.refusal {
            object["refusal"] = ["code": refusal.code, "reason": refusal.description]
        } else {
            object["refusal"] = NSNull()
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

}
