import Crypto
import Foundation

/// The signature algorithms Tether verifies, and the others it recognises in order to refuse them by name.
public enum SignatureAlgorithm: String, Hashable, Sendable {
    case ed25519 = "Ed25519"
    case ecdsaP256 = "ECDSA-P256"
}

/// A public key trusted to sign firmware, as MCUboot holds its keys: the SubjectPublicKeyInfo DER that `imgtool
/// getpub` embeds in the bootloader (imgtool keys/ed25519.py and keys/ecdsa.py `get_public_bytes`), and the
/// SHA-256 of those bytes, which an image's KEYHASH TLV carries (imgtool image.py `create`: `sha.update(pub)` over
/// `get_public_bytes()`; MCUboot boot/bootutil/src/bootutil_find_key.c hashes `bootutil_keys[i].key`, the same DER).
public struct TrustedKey: Hashable, Sendable {
    /// What the edge calls it: the key file's name.
    public var name: String
    public var algorithm: SignatureAlgorithm
    /// The key in imgtool's own encoding (for P-256, re-encoded from the point: uncompressed, named curve), so that
    /// its hash is the one imgtool computes however the file spelled it.
    public var subjectPublicKeyInfo: [UInt8]
    /// SHA-256 of `subjectPublicKeyInfo`.
    public var keyHash: [UInt8]

    /// The Ed25519 SubjectPublicKeyInfo (RFC 8410 §4): SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING {0, key} },
    /// always these 12 bytes and then the 32-byte key.
    static let ed25519Prefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    /// A P-256 SubjectPublicKeyInfo with a compressed point (RFC 5480 §2.1.1 id-ecPublicKey, §2.1.1.1 secp256r1,
    /// §2.2 BIT STRING of 33 bytes), up to the point.
    static let compressedP256Prefix: [UInt8] = [
        0x30, 0x39, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE,
        0x3D, 0x03, 0x01, 0x07, 0x03, 0x22, 0x00,
    ]

    /// Reads one public key from a file's contents: PEM ("-----BEGIN PUBLIC KEY-----", what `imgtool getpub -e pem`
    /// writes) or DER SubjectPublicKeyInfo (`imgtool getpub -e raw`), Ed25519 or P-256. A private key is refused
    /// with its own reason: a trusted-key directory holds what devices trust, never what signs.
    public init(name: String, contents: [UInt8]) throws(KeyLoadingError) {
        let der = try Self.derBytes(contents)
        if der.count == Self.ed25519Prefix.count + 32, der.starts(with: Self.ed25519Prefix) {
            self.init(name: name, algorithm: .ed25519, subjectPublicKeyInfo: der)
            return
        }
        if let key = try? P256.Signing.PublicKey(derRepresentation: der) {
            self.init(name: name, algorithm: .ecdsaP256, subjectPublicKeyInfo: Array(key.derRepresentation))
            return
        }
        // swift-crypto's DER reader takes only the uncompressed point; RFC 5480 §2.2 allows the compressed one too.
        if der.count == Self.compressedP256Prefix.count + 33, der.starts(with: Self.compressedP256Prefix),
            let key = try? P256.Signing.PublicKey(compressedRepresentation: der.dropFirst(Self.compressedP256Prefix.count))
        {
            self.init(name: name, algorithm: .ecdsaP256, subjectPublicKeyInfo: Array(key.derRepresentation))
            return
        }
        // RFC 5208 §5 PrivateKeyInfo / RFC 5915 §3 ECPrivateKey: SEQUENCE { INTEGER version, ... }, where a
        // SubjectPublicKeyInfo starts SEQUENCE { SEQUENCE ... }.
        if Self.startsWithSequenceOfInteger(der) { throw .privateKey }
        throw .notAPublicKey("neither an Ed25519 nor a P-256 SubjectPublicKeyInfo")
    }

    init(name: String, algorithm: SignatureAlgorithm, subjectPublicKeyInfo: [UInt8]) {
        self.name = name
        self.algorithm = algorithm
        self.subjectPublicKeyInfo = subjectPublicKeyInfo
        self.keyHash = Array(SHA256.hash(data: subjectPublicKeyInfo))
    }

    /// The raw 32-byte Ed25519 key, or the P-256 key, ready to verify.
    func verifier() -> Verifier? {
        switch algorithm {
        case .ed25519:
            return (try? Curve25519.Signing.PublicKey(rawRepresentation: subjectPublicKeyInfo.dropFirst(Self.ed25519Prefix.count)))
                .map(Verifier.ed25519)
        case .ecdsaP256:
            return (try? P256.Signing.PublicKey(derRepresentation: subjectPublicKeyInfo)).map(Verifier.ecdsaP256)
        }
    }

    enum Verifier {
        case ed25519(Curve25519.Signing.PublicKey)
        case ecdsaP256(P256.Signing.PublicKey)
    }

    /// DER from PEM (RFC 7468 §2: one "-----BEGIN label-----" block of base64) or the bytes as they are.
    private static func derBytes(_ contents: [UInt8]) throws(KeyLoadingError) -> [UInt8] {
        guard !contents.isEmpty else { throw .notAPublicKey("the file is empty") }
        let text = String(decoding: contents, as: UTF8.self)
        guard text.contains("-----BEGIN ") else { return contents }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        let begins = lines.indices.filter { lines[$0].hasPrefix("-----BEGIN ") && lines[$0].hasSuffix("-----") }
        guard begins.count == 1, let begin = begins.first else {
            throw .notAPublicKey("\(begins.count) PEM blocks where one key is expected")
        }
        let label = String(lines[begin].dropFirst("-----BEGIN ".count).dropLast("-----".count))
        if label.contains("PRIVATE KEY") { throw .privateKey }
        guard label == "PUBLIC KEY" else { throw .notAPublicKey("a PEM \"\(label)\", not a \"PUBLIC KEY\"") }
        guard let end = lines[(begin + 1)...].firstIndex(of: "-----END \(label)-----") else {
            throw .notAPublicKey("the PEM block has no END line")
        }
        guard let der = Data(base64Encoded: lines[(begin + 1)..<end].joined()) else {
            throw .notAPublicKey("the PEM block is not valid base64")
        }
        return Array(der)
    }

    private static func startsWithSequenceOfInteger(_ der: [UInt8]) -> Bool {
        guard der.count > 2, der[0] == 0x30 else { return false }
        // Short or long form length (X.690 §8.1.3), then the first element's tag.
        let lengthOctets = der[1] < 0x80 ? 0 : Int(der[1] & 0x7F)
        let first = 2 + lengthOctets
        return first < der.count && der[first] == 0x02
    }
}

/// Why a file is not a trusted key.
public enum KeyLoadingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A private key: trusted keys are public keys (`imgtool getpub`), and a private key does not belong on a gateway.
    case privateKey
    case notAPublicKey(String)

    public var description: String {
        switch self {
        case .privateKey:
            "a private key, not a public one: put the output of `imgtool getpub -k KEY -e pem` there instead, and keep the private key off the gateway"
        case .notAPublicKey(let reason): "not a public key: \(reason)"
        }
    }
}

/// The keys a device is trusted to accept images from: what the trusted-key directory held (the edge reads it).
public struct TrustedKeys: Hashable, Sendable {
    public var keys: [TrustedKey]

    public init(_ keys: [TrustedKey]) { self.keys = keys }

    /// The trusted key whose SubjectPublicKeyInfo hashes to `keyHash` (a KEYHASH TLV, or the hash of a PUBKEY TLV's
    /// bytes as MCUboot's MCUBOOT_HW_KEY build takes it: bootutil_find_key.c hashes the TLV as it is).
    public func key(withHash keyHash: some Collection<UInt8>) -> TrustedKey? {
        keys.first { $0.keyHash.elementsEqual(keyHash) }
    }
}
