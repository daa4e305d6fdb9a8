import TetherPrimitives

/// The fixed names of the sync API (docs/specs/sync-api.yaml): paths, media types, headers and limits both sides agree
/// on. The spec is the authority; this file only spells it for Swift.
public enum SyncAPI {
    /// Every path is under this prefix; a breaking change gets a new one.
    public static let versionPrefix = "/v1"

    public static let pushPath = "/v1/commands"
    public static let changesPath = "/v1/changes"
    /// `/v1/devices/{serial}/settings`, the serial percent-encoded as a path segment.
    public static func settingsPath(serial: String) -> String {
        "/v1/devices/\(PathSegment.encode(serial))/settings"
    }

    public static let jsonMediaType = "application/json"
    /// RFC 9457 §3.
    public static let problemMediaType = "application/problem+json"

    public enum Query {
        public static let after = "after"
        public static let limit = "limit"
    }

    /// Server-side defaults, advertised in problems when a request exceeds them.
    public enum Defaults {
        public static let maximumCommandsPerPush = 1000
        public static let maximumRequestBytes = 4 * 1024 * 1024
        public static let pageLimit = 200
        public static let maximumPageLimit = 1000
    }
}

/// Percent-encoding of one path segment (RFC 3986 §3.3): unreserved characters stay, everything else is `%XX`.
/// A serial may hold any printable ASCII (§7.2), `/` included, so it cannot go into a path unencoded.
public enum PathSegment {
    public static func encode(_ segment: String) -> String {
        var encoded = ""
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "%" + Hex.byte(byte).uppercased()
            }
        }
        return encoded
    }

    /// `nil` when a `%` is not followed by two hex digits or the bytes are not UTF-8.
    public static func decode(_ segment: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Hex.value), let low = iterator.next().flatMap(Hex.value) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
