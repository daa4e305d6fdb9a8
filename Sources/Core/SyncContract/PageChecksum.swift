import Crypto
import TetherPrimitives

/// The page checksum of docs/specs/sync-api.yaml ("Page checksum"): `sha256:` and the lowercase hex SHA-256 of the
/// page's canonical lines, one per change in page order, each terminated by LF (U+000A).
///
/// A line is fields joined by TAB (U+0009):
///
///     kind, operation, serial, version                                        (every change)
///     hardwareRevision, firmwareVersion, protocolVersion, capabilities,
///         pairingState                                                        (device upsert)
///     changedBy, settings                                                     (deviceSettings upsert)
///     uid, sample_uid, reason, requested_by, note, requested_at,
///         sample_dedup_key                                                    (healthSample delete: the tombstone)
///
/// Integers are decimal without leading zeros. Strings are UTF-8 with `\` written `\\`, TAB `\t`, LF `\n` and
/// CR `\r`. An absent value is written `\0` (backslash, digit zero), which no escaped string can produce.
/// `settings` is the settings' TLV records (§7.11) in ascending key order, each `key:value` with the key in
/// decimal and the value bytes in lowercase hex, joined by `,` (empty when there are none).
///
/// The empty page's checksum is therefore the SHA-256 of no bytes.
public enum PageChecksum {
    public static let prefix = "sha256:"

    public static func checksum(of changes: [Change]) -> String {
        var hasher = SHA256()
        for change in changes {
            hasher.update(data: Array(canonicalLine(change).utf8))
        }
        return prefix + Hex.encode(hasher.finalize())
    }

    public static func canonicalLine(_ change: Change) -> String {
        var fields = [change.kind.rawValue, change.operation.rawValue, optional(change.serial.map(escape)), String(change.version)]
        switch (change.kind, change.operation) {
        case (.device, .upsert):
            if let device = change.device {
                fields += [
                    optional(device.hardwareRevision.map(String.init)), optional(device.firmwareVersion.map(escape)),
                    optional(device.protocolVersion.map(String.init)), String(device.capabilities), device.pairingState.rawValue,
                ]
            } else {
                fields.append(absent)
            }
        case (.deviceSettings, .upsert):
            if let settings = change.settings {
                fields.append(settings.changedBy.rawValue)
                fields.append(records(settings.desired))
            } else {
                fields.append(absent)
            }
        case (.device, .delete), (.deviceSettings, .delete):
            break
        case (.healthSample, _):
            if let tombstone = change.healthDeletion {
                fields += [
                    escape(tombstone.uid), escape(tombstone.sampleUid), escape(tombstone.reason), escape(tombstone.requestedBy),
                    optional(tombstone.note.map(escape)), String(tombstone.requestedAt), optional(tombstone.sampleDedupKey.map(escape)),
                ]
            } else {
                fields.append(absent)
            }
        }
        return fields.joined(separator: "\t") + "\n"
    }

    static let absent = "\\0"

    static func optional(_ value: String?) -> String { value ?? absent }

    /// An invalid settings document (which a conforming server never sends) is written from its raw fields so
    /// the checksum still covers every byte of it.
    static func records(_ document: SettingsDocument) -> String {
        if let records = document.canonicalRecords {
            return records.map { "\($0.key):\(Hex.encode($0.value))" }.joined(separator: ",")
        }
        return escape("invalid:\(document)")
    }

    static func escape(_ string: String) -> String {
        var out = ""
        out.reserveCapacity(string.utf8.count)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
