import TetherPrimitives

/// Why Tether will not send an image to a device. Each case names what is wrong and where; `code` is the stable
/// word `tether firmware inspect --json` prints, `description` the sentence it prints for a person.
/// docs/design/firmware-images.md lists them with the rule each one comes from.
public enum ImageRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    /// The first four bytes are not `IMAGE_MAGIC` (0x96f3b83d, little-endian).
    case notAnImage(magic: UInt32)
    /// The file ends inside `region`: `needed` bytes are required to read it, the file has `available`.
    case truncated(ImageRegion, needed: Int, available: Int)
    /// The header's sizes and the TLV areas' info headers disagree.
    case inconsistent(Inconsistency)
    /// The SHA256 TLV does not match the SHA-256 of header, body and protected TLVs: a byte in them was changed.
    case tampered(stated: [UInt8], computed: [UInt8])
    /// There is no SHA256 TLV (nor another hash Tether would refuse as unsupported).
    case noHash
    /// There is no signature TLV: an image made by `imgtool sign` without `--key`.
    case unsigned
    /// A signature with no KEYHASH or PUBKEY before it: nothing says which key made it (MCUboot skips such a
    /// signature, image_validate.c).
    case signatureWithoutKey
    /// Signed by a key whose hash is not among the trusted keys' (`keyHash`: SHA-256 of its SubjectPublicKeyInfo).
    case untrustedKey(keyHash: [UInt8])
    /// The trusted key named is of another algorithm than the signature.
    case keyTypeMismatch(key: String, signature: SignatureAlgorithm)
    /// The signature does not verify against the trusted key (or is not a well-formed signature of its type).
    case badSignature(SignatureAlgorithm, keyName: String)
    /// A well-formed image of a kind Tether does not verify.
    case unsupported(Unsupported)
    /// A TLV type that may appear once appears again.
    case duplicateTLV(ImageTLVType)
    /// Two TLVs that exclude each other (two signature types, two key forms, two hashes).
    case conflictingTLVs(ImageTLVType, ImageTLVType)
    /// A TLV outside the protected area that MCUboot's allow list does not permit there (image_validate.c
    /// `allowed_unprot_tlvs`): not covered by the hash, so anyone could have changed it.
    case unprotectedTLVNotAllowed(ImageTLVType, offset: Int)
    /// A known TLV whose length is wrong for its type.
    case malformedTLV(ImageTLVType, length: Int, expected: Int)

    public enum Inconsistency: Hashable, Sendable {
        /// `ih_hdr_size` is smaller than the 32-byte header.
        case headerSizeTooSmall(UInt16)
        /// `ih_protect_tlv_size` is non-zero but no protected TLV info (0x6908) follows the body.
        case protectedAreaMissing(protectedTLVSize: UInt16, foundMagic: UInt16)
        /// The protected info's total differs from `ih_protect_tlv_size` (0 when the header announces none).
        case protectedAreaSizeMismatch(header: UInt16, area: UInt16)
        /// No TLV info (0x6907) where the unprotected area must start.
        case tlvAreaMissing(offset: Int, foundMagic: UInt16)
        /// An info header whose total is smaller than the 4-byte info header itself.
        case areaSmallerThanItsInfo(protected: Bool, total: UInt16)
        /// A TLV record (its header or its value) runs past the end of its area.
        case recordOverrunsArea(protected: Bool, offset: Int)
    }

    public enum Unsupported: Hashable, Sendable {
        /// Byte-swapped magic: imgtool's `--endian big`.
        case bigEndian
        /// `IMAGE_F_ENCRYPTED_*`: the hash covers the plaintext, which only the device can recover.
        case encrypted
        /// A signature algorithm Tether does not verify (RSA-PSS, the retired ECDSA224).
        case signature(ImageTLVType)
        /// SIG_PURE: the signature covers the image itself, and there is no SHA256 TLV for SMP's image state.
        case pureSignature
        /// SHA384 or SHA512 in place of SHA256.
        case hash(ImageTLVType)
    }

    /// A stable word for scripts (`--json`).
    public var code: String {
        switch self {
        case .notAnImage: "not-an-image"
        case .truncated: "truncated"
        case .inconsistent: "inconsistent-sizes"
        case .tampered: "tampered"
        case .noHash: "no-hash"
        case .unsigned: "unsigned"
        case .signatureWithoutKey: "signature-without-key"
        case .untrustedKey: "untrusted-key"
        case .keyTypeMismatch: "key-type-mismatch"
        case .badSignature: "bad-signature"
        case .unsupported: "unsupported"
        case .duplicateTLV: "duplicate-tlv"
        case .conflictingTLVs: "conflicting-tlvs"
        case .unprotectedTLVNotAllowed: "unprotected-tlv-not-allowed"
        case .malformedTLV: "malformed-tlv"
        }
    }

    public var description: String {
        switch self {
        case .notAnImage(let magic):
            "not an MCUboot image: it starts with 0x\(hex32(magic)), not the magic 0x96f3b83d"
        case .truncated(let region, let needed, let available):
            "truncated in the \(region.rawValue): \(needed) bytes needed, the file has \(available)"
        case .inconsistent(let problem):
            "sizes inconsistent: " + problem.description
        case .tampered(let stated, let computed):
            "tampered: the SHA-256 of header, body and protected TLVs is \(hex(computed)), the image states \(hex(stated))"
        case .noHash: "no SHA256 TLV: nothing to check the image against"
        case .unsigned: "unsigned: the image has no signature"
        case .signatureWithoutKey: "a signature without a KEYHASH or PUBKEY TLV naming its key"
        case .untrustedKey(let keyHash): "signed by an untrusted key (key hash \(hex(keyHash)))"
        case .keyTypeMismatch(let key, let signature):
            "the trusted key \(key) cannot have made an \(signature.rawValue) signature"
        case .badSignature(let algorithm, let key): "bad \(algorithm.rawValue) signature for the trusted key \(key)"
        case .unsupported(let what): "unsupported: " + what.description
        case .duplicateTLV(let type): "duplicate \(type) TLV"
        case .conflictingTLVs(let first, let second): "conflicting TLVs: \(first) and \(second)"
        case .unprotectedTLVNotAllowed(let type, let offset):
            "\(type) TLV at offset \(offset) is outside the protected area, where MCUboot does not allow it"
        case .malformedTLV(let type, let length, let expected): "\(type) TLV is \(length) bytes, expected \(expected)"
        }
    }
}

extension ImageRefusal.Inconsistency: CustomStringConvertible {
    public var description: String {
        switch self {
        case .headerSizeTooSmall(let size): "header size \(size) is smaller than the 32-byte header"
        case .protectedAreaMissing(let size, let magic):
            "the header announces \(size) bytes of protected TLVs but the body is followed by 0x\(hex16(magic)), not 0x6908"
        case .protectedAreaSizeMismatch(let header, let area):
            "the header's protected TLV size is \(header) but the protected TLV info says \(area)"
        case .tlvAreaMissing(let offset, let magic): "no TLV info 0x6907 at offset \(offset) (found 0x\(hex16(magic)))"
        case .areaSmallerThanItsInfo(let isProtected, let total):
            "the \(isProtected ? "protected " : "")TLV area's size \(total) is smaller than its 4-byte info header"
        case .recordOverrunsArea(let isProtected, let offset):
            "the TLV record at offset \(offset) runs past the end of the \(isProtected ? "protected" : "unprotected") TLV area"
        }
    }
}

extension ImageRefusal.Unsupported: CustomStringConvertible {
    public var description: String {
        switch self {
        case .bigEndian: "a big-endian image (imgtool --endian big)"
        case .encrypted: "an encrypted image: its hash covers the plaintext"
        case .signature(let type): "\(type) signatures"
        case .pureSignature: "a pure signature (SIG_PURE) over the image rather than its hash"
        case .hash(let type): "\(type) hashes (Tether checks SHA256)"
        }
    }
}

/// The parts of an image a truncation can fall in, named as `tether firmware inspect` names them.
public enum ImageRegion: String, Hashable, Sendable {
    case header
    case body
    case protectedTLVInfo = "protected TLV info"
    case protectedTLVs = "protected TLVs"
    case tlvInfo = "TLV info"
    case tlvs = "TLVs"
}

/// Lower-case hex, two digits a byte (`Hex`).
func hex(_ bytes: some Sequence<UInt8>) -> String { Hex.encode(bytes) }

private func hex32(_ value: UInt32) -> String { hex([UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]) }
private func hex16(_ value: UInt16) -> String { hex([UInt8(value >> 8), UInt8(truncatingIfNeeded: value)]) }
