import TetherPrimitives

/// An MCUboot image taken apart: header, body, the protected and unprotected TLV areas, and what follows them.
/// Only the structure is checked here (sizes, magics, records that fit); what the records say is judged by
/// `ImageVerifier`.
///
/// The layout (design.md "Image format"; imgtool's image.py `create`; MCUboot's `bootutil_tlv_iter_begin`):
///
///     [0, hdr_size)                          header (32 bytes used) and padding
///     [hdr_size, hdr_size + img_size)        body
///     [.., + protect_tlv_size)               protected TLV area: info 0x6908 whose total equals protect_tlv_size
///     [.., + tlv_tot)                        unprotected TLV area: info 0x6907
///     [.., end of file)                      trailing bytes (imgtool --pad: erased flash and the boot trailer)
///
/// The hash covers [0, hdr_size + img_size + protect_tlv_size).
public struct ParsedImage: Hashable, Sendable {
    public var header: ImageHeader
    public var bodyRange: Range<Int>
    /// nil when `protectedTLVSize` is 0.
    public var protectedAreaRange: Range<Int>?
    public var unprotectedAreaRange: Range<Int>
    public var protectedTLVs: [ImageTLV]
    public var unprotectedTLVs: [ImageTLV]
    /// Bytes after the unprotected TLV area. MCUboot never reads them as part of the image; imgtool's `--pad` puts
    /// the slot's erased flash and its boot trailer there.
    public var trailingByteCount: Int

    /// The bytes the SHA256 TLV and the signature cover: header, body and the protected TLV area.
    public var hashedRange: Range<Int> { 0..<(protectedAreaRange?.upperBound ?? bodyRange.upperBound) }
    public var tlvs: [ImageTLV] { protectedTLVs + unprotectedTLVs }

    /// Takes `image` apart, or says what is wrong with its structure and where. Never traps: every size comes from
    /// the image, so every sum is made in `Int` from at most 32-bit fields (it cannot overflow on a 64-bit platform)
    /// and compared with the bytes there are before a byte is read.
    public init(_ image: [UInt8]) throws(ImageRefusal) {
        let header = try ImageHeader(image[...])
        let bodyStart = Int(header.headerSize)
        let bodyEnd = bodyStart + Int(header.imageSize)
        if image.count < bodyEnd {
            throw .truncated(bodyStart > image.count ? .header : .body, needed: bodyEnd, available: image.count)
        }

        // MCUboot's bootutil_tlv_iter_begin (boot/bootutil/src/tlv.c): a protected info header must carry exactly
        // ih_protect_tlv_size as its total, and a header that announces no protected area must not be followed by
        // one.
        var protectedArea: Range<Int>?
        var protectedTLVs: [ImageTLV] = []
        let firstInfo = try Self.areaInfo(image, at: bodyEnd, region: header.protectedTLVSize == 0 ? .tlvInfo : .protectedTLVInfo)
        if header.protectedTLVSize != 0 {
            guard firstInfo.magic == TLVArea.protectedMagic else {
                throw .inconsistent(.protectedAreaMissing(protectedTLVSize: header.protectedTLVSize, foundMagic: firstInfo.magic))
            }
            guard firstInfo.total == header.protectedTLVSize else {
                throw .inconsistent(.protectedAreaSizeMismatch(header: header.protectedTLVSize, area: firstInfo.total))
            }
            let area = try Self.area(image, start: bodyEnd, total: firstInfo.total, region: .protectedTLVs)
            protectedTLVs = try TLVArea.records(in: image, area: area, isProtected: true)
            protectedArea = area
        } else if firstInfo.magic == TLVArea.protectedMagic {
            throw .inconsistent(.protectedAreaSizeMismatch(header: 0, area: firstInfo.total))
        }

        let unprotectedStart = protectedArea?.upperBound ?? bodyEnd
        let info = try Self.areaInfo(image, at: unprotectedStart, region: .tlvInfo)
        guard info.magic == TLVArea.unprotectedMagic else {
            throw .inconsistent(.tlvAreaMissing(offset: unprotectedStart, foundMagic: info.magic))
        }
        let unprotectedArea = try Self.area(image, start: unprotectedStart, total: info.total, region: .tlvs)
        let unprotectedTLVs = try TLVArea.records(in: image, area: unprotectedArea, isProtected: false)

        self.header = header
        self.bodyRange = bodyStart..<bodyEnd
        self.protectedAreaRange = protectedArea
        self.unprotectedAreaRange = unprotectedArea
        self.protectedTLVs = protectedTLVs
        self.unprotectedTLVs = unprotectedTLVs
        self.trailingByteCount = image.count - unprotectedArea.upperBound
    }

    private static func areaInfo(_ image: [UInt8], at offset: Int, region: ImageRegion) throws(ImageRefusal) -> (magic: UInt16, total: UInt16) {
        var reader = ByteReader(image[min(offset, image.count)...])
        guard let magic = reader.readUInt16(), let total = reader.readUInt16() else {
            throw .truncated(region, needed: offset + TLVArea.infoByteCount, available: image.count)
        }
        return (magic, total)
    }

    /// The area that starts at `start` with an info header giving `total` (which counts the info header itself).
    private static func area(_ image: [UInt8], start: Int, total: UInt16, region: ImageRegion) throws(ImageRefusal) -> Range<Int> {
        guard Int(total) >= TLVArea.infoByteCount else {
            throw .inconsistent(.areaSmallerThanItsInfo(protected: region == .protectedTLVs, total: total))
        }
        let end = start + Int(total)
        guard end <= image.count else { throw .truncated(region, needed: end, available: image.count) }
        return start..<end
    }
}
