import TetherPrimitives

/// What the simulated device reads from an image in one of its slots, the way Zephyr's img_mgmt does
/// (subsys/mgmt/mcumgr/grp/img_mgmt/src/img_mgmt.c, `img_mgmt_read_info`): the version from the MCUboot header and
/// the hash from the SHA256 TLV of the unprotected TLV area. Written apart from MCUbootImage (which Tether's client
/// side uses) so that the device model does not share the client's mistakes.
///
/// MCUboot image layout (MCUboot docs/design.md, "Image Format"; bootutil/include/bootutil/image.h): a 32-byte
/// little-endian header {magic 0x96f3b83d, load_addr, hdr_size u16, protect_tlv_size u16, img_size u32, flags u32,
/// version {u8 major, u8 minor, u16 revision, u32 build}}, the body, then the TLV areas: protected (info magic 0x6908)
/// and unprotected (0x6907), each opened by {u16 magic, u16 total length including this header}.
public struct SlotImage: Hashable, Sendable {
    public static let headerMagic: UInt32 = 0x96F3_B83D
    static let protectedInfoMagic: UInt16 = 0x6908
    static let unprotectedInfoMagic: UInt16 = 0x6907
    static let sha256TLV: UInt16 = 0x10
    /// image.h IMAGE_F_NON_BOOTABLE: "Split image app" (img_mgmt reports `bootable` as its absence).
    static let nonBootableFlag: UInt32 = 0x10

    public var bytes: [UInt8]
    /// "major.minor.revision", with ".build" when build is not 0 (img_mgmt_util.c, `img_mgmt_ver_str`).
    public var version: String
    /// The SHA256 TLV's value: what MCUboot checks and what the state list reports as `hash`.
    public var hash: [UInt8]
    public var bootable: Bool
    /// The extent the hash covers: header, body and protected TLVs (MCUboot bootutil_img_hash).
    let hashedLength: Int

    /// Nil when the bytes are not an MCUboot image with a SHA256 TLV (img_mgmt then lists nothing for the slot).
    public init?(_ bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        guard let magic = reader.readUInt32(.little), magic == Self.headerMagic, reader.readUInt32(.little) != nil,
            let headerSize = reader.readUInt16(.little), let protectedSize = reader.readUInt16(.little),
            let bodySize = reader.readUInt32(.little), let flags = reader.readUInt32(.little),
            let major = reader.readUInt8(), let minor = reader.readUInt8(), let revision = reader.readUInt16(.little),
            let build = reader.readUInt32(.little)
        else { return nil }
        let tlvStart = Int(headerSize) + Int(bodySize)
        var unprotectedStart = tlvStart
        if protectedSize > 0 {
            guard let info = Self.infoHeader(bytes, at: tlvStart), info.magic == Self.protectedInfoMagic,
                Int(info.length) == Int(protectedSize)
            else { return nil }
            unprotectedStart += Int(protectedSize)
        }
        guard let info = Self.infoHeader(bytes, at: unprotectedStart), info.magic == Self.unprotectedInfoMagic,
            unprotectedStart + Int(info.length) <= bytes.count
        else { return nil }
        var hash: [UInt8]?
        var offset = unprotectedStart + 4
        let end = unprotectedStart + Int(info.length)
        while offset + 4 <= end {
            var tlv = ByteReader(Array(bytes[offset..<(offset + 4)]))
            guard let type = tlv.readUInt16(.little), let length = tlv.readUInt16(.little), offset + 4 + Int(length) <= end else {
                return nil
            }
            if type == Self.sha256TLV, length == 32 { hash = Array(bytes[(offset + 4)..<(offset + 36)]) }
            offset += 4 + Int(length)
        }
        guard let hash else { return nil }
        self.bytes = bytes
        self.hash = hash
        self.hashedLength = tlvStart + Int(protectedSize)
        self.bootable = flags & Self.nonBootableFlag == 0
        self.version = "\(major).\(minor).\(revision)" + (build == 0 ? "" : ".\(build)")
    }

    private static func infoHeader(_ bytes: [UInt8], at offset: Int) -> (magic: UInt16, length: UInt16)? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        var reader = ByteReader(Array(bytes[offset..<(offset + 4)]))
        guard let magic = reader.readUInt16(.little), let length = reader.readUInt16(.little) else { return nil }
        return (magic, length)
    }
}
