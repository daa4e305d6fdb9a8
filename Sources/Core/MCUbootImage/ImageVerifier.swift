import Crypto

/// Decides whether an MCUboot image may be sent to a device: it must be well formed, unchanged since it was signed,
/// and signed by a trusted key. Pure: bytes and keys in, a verdict out; reading files is the caller's business.
///
/// The checks, in order; the first that fails is the verdict's refusal:
///  1. Structure (`ParsedImage`): magic, header, sizes, TLV areas and records inside their areas.
///  2. Flags: an encrypted image is refused (imgtool hashes the plaintext, image.py `create`). A pure signature
///     (SIG_PURE) or a hash other than SHA256 is unsupported.
///  3. TLV rules: nothing unprotected beyond MCUboot's allow list (image_validate.c `allowed_unprot_tlvs`); no
///     duplicates of a TLV that may appear once; no two hashes, key forms or signature types; known lengths.
///  4. Hash: no SHA256 TLV is refused; the SHA-256
///     over [0, hdr_size + img_size + protect_tlv_size) must equal it (design.md "Image format").
///  5. Signature: none is `unsigned`; RSA and ECDSA224 are unsupported; the key TLV must name a trusted key and match
///     its algorithm; the signature must verify over the 32-byte digest (Ed25519: imgtool keys/ed25519.py
///     `sign_digest` signs the digest as the message; ECDSA P-256: imgtool keys/ecdsa.py `sign` signs the payload
///     with ECDSA-SHA256, which is a signature over that same digest, and MCUboot image_ecdsa.c verifies it on the
///     hash). Padding after the ECDSA DER (imgtool `--pad-sig`, up to 72 bytes) must be zeros.
public enum ImageVerifier {
    /// One signature, one key, one hash: imgtool writes one of each (image.py `create`). MCUboot allows several
    /// key-and-signature pairs; Tether refuses a second rather than guess which pair a device would check.
    static let singletons = Set<ImageTLVType>([.keyHash, .publicKey, .sha256, .sha384, .sha512, .securityCounter, .signaturePure])
        .union(signatureTypes)
    static let signatureTypes: Set<ImageTLVType> = [.ed25519, .ecdsaSignature, .rsa2048PSS, .rsa3072PSS, .ecdsa224]
    static let hashTypes: [ImageTLVType] = [.sha256, .sha384, .sha512]
    /// Lengths fixed by the type (design.md; imgtool image.py: SHA256 digest, KEYHASH a SHA-256, SEC_CNT 'I',
    /// SIG_PURE '?'; keys/ed25519.py `sig_len` 64).
    static let fixedLengths: [ImageTLVType: Int] = [.sha256: 32, .keyHash: 32, .securityCounter: 4, .ed25519: 64, .signaturePure: 1]

    public static func inspect(_ bytes: [UInt8], trustedKeys: TrustedKeys) -> ImageVerdict {
        let image: ParsedImage
        do {
            image = try ParsedImage(bytes)
        } catch {
            return ImageVerdict(refusal: error)
        }
        let digest = SHA256.hash(data: bytes[image.hashedRange])
        var verdict = ImageVerdict(image: image, computedHash: Array(digest))
        let tlvs = image.tlvs
        verdict.statedHash = tlvs.first { $0.type == .sha256 }.map { Array($0.value) }
        verdict.signatureType = tlvs.first { signatureTypes.contains($0.type) }?.type
        if let counter = tlvs.first(where: { $0.type == .securityCounter && $0.isProtected }), counter.value.count == 4 {
            verdict.securityCounter = counter.value.reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }
        verdict.key = keyVerdict(tlvs, trustedKeys: trustedKeys)
        do {
            try checkRules(image)
            try checkHash(tlvs, computed: verdict.computedHash ?? [])
            try checkSignature(tlvs, digest: digest, key: verdict.key)
        } catch {
            verdict.refusal = error
        }
        return verdict
    }

    private static func checkRules(_ image: ParsedImage) throws(ImageRefusal) {
        if !image.header.flags.isDisjoint(with: [.encryptedAES128, .encryptedAES256]) {
            throw .unsupported(.encrypted)
        }
        // Before any length check: imgtool makes a pure Ed25519 image with SHA512, and then its KEYHASH is a
        // SHA-512 too (image.py `key_and_user_sha_to_alg_and_tlv`, `ALLOWED_PURE_KEY_SHA`), which would otherwise
        // read as a malformed KEYHASH.
        let types = Set(image.tlvs.map(\.type))
        if types.contains(.signaturePure) { throw .unsupported(.pureSignature) }
        if !types.contains(.sha256), let other = hashTypes.first(where: types.contains) { throw .unsupported(.hash(other)) }
        var seen: Set<ImageTLVType> = []
        for tlv in image.tlvs {
            if !tlv.isProtected, !ImageTLVType.allowedUnprotected.contains(tlv.type) {
                throw .unprotectedTLVNotAllowed(tlv.type, offset: tlv.valueOffset - TLVArea.recordHeaderByteCount)
            }
            if singletons.contains(tlv.type), !seen.insert(tlv.type).inserted {
                throw .duplicateTLV(tlv.type)
            }
            if let expected = fixedLengths[tlv.type], tlv.value.count != expected {
                throw .malformedTLV(tlv.type, length: tlv.value.count, expected: expected)
            }
        }
        for group in [signatureTypes, [.keyHash, .publicKey], Set(hashTypes)] {
            let present = image.tlvs.map(\.type).filter(group.contains)
            if present.count > 1 { throw .conflictingTLVs(present[0], present[1]) }
        }
    }

    private static func checkHash(_ tlvs: [ImageTLV], computed: [UInt8]) throws(ImageRefusal) {
        guard let stated = tlvs.first(where: { $0.type == .sha256 }) else { throw .noHash }
        guard stated.value.elementsEqual(computed) else {
            throw .tampered(stated: Array(stated.value), computed: computed)
        }
    }

    /// Whose key the first KEYHASH or PUBKEY names. KEYHASH is the key's hash already; PUBKEY is hashed as it
    /// stands (bootutil_find_key.c, MCUBOOT_HW_KEY), so a trusted key spelled differently is not trusted.
    private static func keyVerdict(_ tlvs: [ImageTLV], trustedKeys: TrustedKeys) -> KeyVerdict {
        guard let keyTLV = tlvs.first(where: { $0.type == .keyHash || $0.type == .publicKey }) else { return .none }
        let keyHash = keyTLV.type == .keyHash ? Array(keyTLV.value) : Array(SHA256.hash(data: keyTLV.value))
        return trustedKeys.key(withHash: keyHash).map(KeyVerdict.trusted) ?? .untrusted(keyHash: keyHash)
    }

    private static func checkSignature(_ tlvs: [ImageTLV], digest: SHA256Digest, key: KeyVerdict) throws(ImageRefusal) {
        guard let signature = tlvs.first(where: { signatureTypes.contains($0.type) }) else { throw .unsigned }
        let algorithm: SignatureAlgorithm
        switch signature.type {
        case .ed25519: algorithm = .ed25519
        case .ecdsaSignature: algorithm = .ecdsaP256
        default: throw .unsupported(.signature(signature.type))
        }
        let trusted: TrustedKey
        switch key {
        case .none: throw .signatureWithoutKey
        case .untrusted(let keyHash): throw .untrustedKey(keyHash: keyHash)
        case .trusted(let key): trusted = key
        }
        guard trusted.algorithm == algorithm else { throw .keyTypeMismatch(key: trusted.name, signature: algorithm) }
        guard verify(signature.value, digest: digest, key: trusted) else {
            throw .badSignature(algorithm, keyName: trusted.name)
        }
    }

    private static func verify(_ signature: ArraySlice<UInt8>, digest: SHA256Digest, key: TrustedKey) -> Bool {
        switch key.verifier() {
        case .ed25519(let publicKey):
            // The message is the 32-byte digest itself (imgtool `sign_digest`; MCUboot image_ed25519.c checks
            // mlen == IMAGE_HASH_SIZE and verifies ED25519_verify(msg = hash)).
            return publicKey.isValidSignature(signature, for: Array(digest))
        case .ecdsaP256(let publicKey):
            guard let der = ecdsaDER(signature),
                let parsed = try? P256.Signing.ECDSASignature(derRepresentation: der)
            else { return false }
            return publicKey.isValidSignature(parsed, for: digest)
        case nil:
            return false
        }
    }

    /// The DER SEQUENCE at the start of an ECDSA_SIG TLV, without the zero bytes imgtool's `--pad-sig` appends
    /// (keys/ecdsa.py: "pad with one or two zeros"; its `verify` keeps `signature[:signature[1] + 2]`). A P-256
    /// signature is at most 72 bytes, so its length is always in DER's short form (X.690 §8.1.3.4).
    static func ecdsaDER(_ signature: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let start = signature.startIndex
        guard signature.count >= 2, signature[start] == 0x30, signature[start + 1] < 0x80 else { return nil }
        let end = start + 2 + Int(signature[start + 1])
        guard end <= signature.endIndex, signature[end...].allSatisfy({ $0 == 0 }) else { return nil }
        return signature[start..<end]
    }
}
