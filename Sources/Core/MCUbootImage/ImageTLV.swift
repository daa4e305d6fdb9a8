import TetherPrimitives

/// A TLV record type (design.md "Image trailer TLV types"; imgtool's `TLV_VALUES`). A struct over the raw value,
/// not an enum: vendors define their own (0x00a0-0x00ff and the like), and an unknown type is data, not an error.
public struct ImageTLVType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let keyHash = Self(0x01)
    public static let publicKey = Self(0x02)
    public static let sha256 = Self(0x10)
    public static let sha384 = Self(0x11)
    public static let sha512 = Self(0x12)
    public static let rsa2048PSS = Self(0x20)
    public static let ecdsa224 = Self(0x21)
    public static let ecdsaSignature = Self(0x22)
    public static let rsa3072PSS = Self(0x23)
    public static let ed25519 = Self(0x24)
    public static let signaturePure = Self(0x25)
    public static let encryptedRSA2048 = Self(0x30)
    public static let encryptedKW = Self(0x31)
    public static let encryptedEC256 = Self(0x32)
    public static let encryptedX25519 = Self(0x33)
    public static let encryptedX25519SHA512 = Self(0x34)
    public static let dependency = Self(0x40)
    public static let securityCounter = Self(0x50)
    public static let bootRecord = Self(0x60)

    /// imgtool's name for the type (`TLV_VALUES`), or its hex value.
    public var description: String {
        let names: [UInt16: String] = [
            0x01: "KEYHASH", 0x02: "PUBKEY", 0x10: "SHA256", 0x11: "SHA384", 0x12: "SHA512", 0x20: "RSA2048",
            0x21: "ECDSA224", 0x22: "ECDSASIG", 0x23: "RSA3072", 0x24: "ED25519", 0x25: "SIG_PURE", 0x30: "ENCRSA2048",
            0x31: "ENCKW", 0x32: "ENCEC256", 0x33: "ENCX25519", 0x34: "ENCX25519_SHA512", 0x40: "DEPENDENCY",
            0x50: "SEC_CNT", 0x60: "BOOT_RECORD", 0x70: "DECOMP_SIZE", 0x71: "DECOMP_SHA", 0x72: "DECOMP_SIGNATURE",
            0x73: "COMP_DEC_SIZE",
        ]
        return names[rawValue] ?? "0x" + String(rawValue, radix: 16)
    }

    /// The types MCUboot accepts outside the protected area when built with `MCUBOOT_USE_TLV_ALLOW_LIST`
    /// (boot/bootutil/src/image_validate.c `allowed_unprot_tlvs`; design.md "TLV allow list"): hashes, keys,
    /// signatures and encryption keys, which cannot be covered by the hash they carry. Anything else unprotected
    /// could be changed without changing the hash, so Tether refuses it always.
    public static let allowedUnprotected: Set<ImageTLVType> = [
        .keyHash, .publicKey, .sha256, .sha384, .sha512, .rsa2048PSS, .ecdsa224, .ecdsaSignature, .rsa3072PSS,
        .ed25519, .signaturePure, .encryptedRSA2048, .encryptedKW, .encryptedEC256, .encryptedX25519,
        .encryptedX25519SHA512,
    ]
}

/// One TLV record as found in an image: `struct image_tlv` {u16 type, u16 len} and its value.
public struct ImageTLV: Hashable, Sendable {
    public var type: ImageTLVType
    /// Where the value starts, counted from the image's first byte.
    public var valueOffset: Int
    public var value: ArraySlice<UInt8>
    /// In the protected area (covered by the hash) or the unprotected one.
    public var isProtected: Bool

    public init(type: ImageTLVType, valueOffset: Int, value: ArraySlice<UInt8>, isProtected: Bool) {
        self.type = type
        self.valueOffset = valueOffset
        self.value = value
        self.isProtected = isProtected
    }
}

/// The two TLV areas' info headers (design.md `struct image_tlv_info`: u16 magic, u16 total size including itself).
public enum TLVArea: Sendable {
    /// `IMAGE_TLV_PROT_INFO_MAGIC`.
    public static let protectedMagic: UInt16 = 0x6908
    /// `IMAGE_TLV_INFO_MAGIC`.
    public static let unprotectedMagic: UInt16 = 0x6907
    public static let infoByteCount = 4
    public static let recordHeaderByteCount = 4

    /// The records of the area whose info header starts at `area.lowerBound` and which ends at `area.upperBound`
    /// (both checked by the caller). Records must fill the area exactly: a record header or value that runs past its
    /// end is refused, as MCUboot's `bootutil_tlv_iter_next` refuses it (boot/bootutil/src/tlv.c).
    static func records(in image: [UInt8], area: Range<Int>, isProtected: Bool) throws(ImageRefusal) -> [ImageTLV] {
        var records: [ImageTLV] = []
        var offset = area.lowerBound + infoByteCount
        while offset < area.upperBound {
            var reader = ByteReader(image[offset..<area.upperBound])
            guard let rawType = reader.readUInt16(), let length = reader.readUInt16() else {
                throw .inconsistent(.recordOverrunsArea(protected: isProtected, offset: offset))
            }
            let valueOffset = offset + recordHeaderByteCount
            guard let value = reader.readBytes(Int(length)) else {
                throw .inconsistent(.recordOverrunsArea(protected: isProtected, offset: offset))
            }
            records.append(ImageTLV(type: ImageTLVType(rawType), valueOffset: valueOffset, value: value, isProtected: isProtected))
            offset = valueOffset + Int(length)
        }
        return records
    }
}
