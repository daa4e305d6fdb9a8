/// What `ImageVerifier` found: as much of the image as could be read, and either the trusted key that signed it or
/// the one reason it is refused. The first failed check (in the order of `ImageVerifier`) is the reason.
public struct ImageVerdict: Hashable, Sendable {
    /// nil only when the header itself could not be read.
    public var image: ParsedImage?
    /// The SHA-256 of header, body and protected TLVs, computed here (nil when the structure is broken).
    public var computedHash: [UInt8]?
    /// The SHA256 TLV's value: the image hash SMP's image state reports.
    public var statedHash: [UInt8]?
    /// SEC_CNT (protected), when present.
    public var securityCounter: UInt32?
    /// The signature TLV's type, when there is one.
    public var signatureType: ImageTLVType?
    public var key: KeyVerdict
    /// nil when the image verifies against a trusted key.
    public var refusal: ImageRefusal?

    public init(
        image: ParsedImage? = nil, computedHash: [UInt8]? = nil, statedHash: [UInt8]? = nil,
        securityCounter: UInt32? = nil, signatureType: ImageTLVType? = nil, key: KeyVerdict = .none,
        refusal: ImageRefusal? = nil
    ) {
        self.image = image
        self.computedHash = computedHash
        self.statedHash = statedHash
        self.securityCounter = securityCounter
        self.signatureType = signatureType
        self.key = key
        self.refusal = refusal
    }

    /// Verified: hash matches and the signature verifies against a trusted key.
    public var isVerified: Bool {
        if refusal == nil, case .trusted = key { return true }
        return false
    }

    public var header: ImageHeader? { image?.header }
}

/// Whose key the image names.
public enum KeyVerdict: Hashable, Sendable {
    /// No KEYHASH or PUBKEY TLV.
    case none
    /// A trusted key (its file name is `TrustedKey.name`).
    case trusted(TrustedKey)
    /// A key that is not trusted, by its hash (SHA-256 of its SubjectPublicKeyInfo).
    case untrusted(keyHash: [UInt8])
}

extension ImageVerdict {
    /// Lower-case hex of the stated hash, of the computed one when there is none stated.
    public var hashHex: String? { (statedHash ?? computedHash).map { hex($0) } }
    public var computedHashHex: String? { computedHash.map { hex($0) } }
}

extension KeyVerdict {
    public var keyHashHex: String? {
        switch self {
        case .none: nil
        case .trusted(let key): hex(key.keyHash)
        case .untrusted(let keyHash): hex(keyHash)
        }
    }
}
