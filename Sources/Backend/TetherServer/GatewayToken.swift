import Crypto
import Foundation

/// A gateway's bearer token: `tether_<id>_<secret>`. The id (16 hex digits) names the stored row; the secret
/// (32 random bytes, base64url) is stored only as its SHA-256. A 256-bit random secret needs no salt or slow
/// hash: the digest cannot be inverted and every token's secret is unique.
///
/// The token is shown once, by `tether-server token create`; nothing logs it (`description` hides the secret).
public struct GatewayToken: Sendable, CustomStringConvertible {
    public let id: String
    private let secret: String

    private static let prefix = "tether_"

    /// A new token from the system's cryptographic random source.
    public static func generate() -> GatewayToken {
        var generator = SystemRandomNumberGenerator()
        let idBytes = (0..<8).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let secretBytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return GatewayToken(id: idBytes.map { String(format: "%02x", $0) }.joined(), secret: Base64URL.encode(secretBytes))
    }

    private init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }

    /// Parses a presented token; `nil` when it is not in this format (the request is then unauthorized).
    public init?(presented: some StringProtocol) {
        guard presented.hasPrefix(Self.prefix) else { return nil }
        let rest = presented.dropFirst(Self.prefix.count)
        guard let separator = rest.firstIndex(of: "_") else { return nil }
        let id = rest[..<separator]
        let secret = rest[rest.index(after: separator)...]
        guard id.count == 16, id.utf8.allSatisfy({ TokenHex.isLowercaseDigit($0) }),
            secret.count == 43, secret.utf8.allSatisfy(Base64URL.isAlphabet)
        else { return nil }
        self.init(id: String(id), secret: String(secret))
    }

    /// The full token, for the one place that shows it to the operator.
    public var reveal: String { Self.prefix + id + "_" + secret }

    /// What the server stores: SHA-256 of the secret.
    public var secretHash: [UInt8] { Array(SHA256.hash(data: Array(secret.utf8))) }

    /// Whether `storedHash` is this token's secret hash, compared in constant time: the time taken does not depend
    /// on where the first differing byte is.
    public func matches(storedHash: [UInt8]) -> Bool {
        ConstantTime.equal(secretHash, storedHash)
    }

    public var description: String { "tether_\(id)_<redacted>" }
}

/// Who a verified token speaks for. Every read and write of the API is scoped by `tenant`.
public struct GatewayPrincipal: Hashable, Sendable {
    public var tenant: String
    public var gateway: String
    public var tokenID: String

    public init(tenant: String, gateway: String, tokenID: String) {
        self.tenant = tenant
        self.gateway = gateway
        self.tokenID = tokenID
    }
}

enum ConstantTime {
    /// Equal lengths are compared byte by byte without an early exit; different lengths are unequal (the length
    /// of a SHA-256 digest is public).
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

enum TokenHex {
    static func isLowercaseDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}

enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
