import TetherPrimitives

/// The 32-byte header at the start of every MCUboot image (MCUboot docs/design.md "Image format", `struct
/// image_header`; imgtool's image.py `add_header`). All fields are little-endian.
public struct ImageHeader: Hashable, Sendable {
    /// `IMAGE_MAGIC` (design.md "Image format").
    public static let magic: UInt32 = 0x96F3_B83D
    /// `IMAGE_HEADER_SIZE`: the fields below; `headerSize` may reserve more (imgtool's `-H 0x200`).
    public static let byteCount = 32

    public var loadAddress: UInt32
    /// `ih_hdr_size`: where the body starts, at least `byteCount`.
    public var headerSize: UInt16
    /// `ih_protect_tlv_size`: the protected TLV area with its info header, or 0 when there is none.
    public var protectedTLVSize: UInt16
    /// `ih_img_size`: the body only (design.md: "Does not include header").
    public var imageSize: UInt32
    public var flags: ImageFlags
    public var version: ImageVersion
    /// `_pad1`, written as 0 by imgtool; kept so that the header reads back as it was.
    public var padding: UInt32

    public init(
        loadAddress: UInt32, headerSize: UInt16, protectedTLVSize: UInt16, imageSize: UInt32, flags: ImageFlags,
        version: ImageVersion, padding: UInt32 = 0
    ) {
        self.loadAddress = loadAddress
        self.headerSize = headerSize
        self.protectedTLVSize = protectedTLVSize
        self.imageSize = imageSize
        self.flags = flags
        self.version = version
        self.padding = padding
    }

    /// Reads the header at the start of `bytes`. Refuses bytes that do not begin with the magic (saying so when they
    /// begin with it byte-swapped: imgtool's `--endian big`, which Tether does not accept) and a header that is cut
    /// short or whose `ih_hdr_size` is smaller than the header itself.
    public init(_ bytes: ArraySlice<UInt8>) throws(ImageRefusal) {
        var reader = ByteReader(bytes)
        guard let magic = reader.readUInt32() else {
            throw .truncated(.header, needed: Self.byteCount, available: bytes.count)
        }
        guard magic == Self.magic else {
            throw magic == Self.magic.byteSwapped ? .unsupported(.bigEndian) : .notAnImage(magic: magic)
        }
        guard
            let loadAddress = reader.readUInt32(), let headerSize = reader.readUInt16(),
            let protectedTLVSize = reader.readUInt16(), let imageSize = reader.readUInt32(),
            let flags = reader.readUInt32(), let major = reader.readUInt8(), let minor = reader.readUInt8(),
            let revision = reader.readUInt16(), let build = reader.readUInt32(), let padding = reader.readUInt32()
        else {
            throw .truncated(.header, needed: Self.byteCount, available: bytes.count)
        }
        // design.md: ih_hdr_size "indicates the length of the header, and therefore the offset of the image itself";
        // a smaller one would put the body inside the 32 bytes just read.
        guard Int(headerSize) >= Self.byteCount else {
            throw .inconsistent(.headerSizeTooSmall(headerSize))
        }
        self.init(
            loadAddress: loadAddress, headerSize: headerSize, protectedTLVSize: protectedTLVSize, imageSize: imageSize,
            flags: ImageFlags(rawValue: flags),
            version: ImageVersion(major: major, minor: minor, revision: revision, build: build), padding: padding)
    }
}

/// `struct image_version` (design.md "Image format"): major.minor.revision+build, as imgtool's `-v` writes it.
public struct ImageVersion: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var major: UInt8
    public var minor: UInt8
    public var revision: UInt16
    public var build: UInt32

    public init(major: UInt8, minor: UInt8, revision: UInt16, build: UInt32) {
        self.major = major
        self.minor = minor
        self.revision = revision
        self.build = build
    }

    /// "1.2.3+4", imgtool's form (`imgtool verify` prints "Image version: 1.2.3+4").
    public var description: String { "\(major).\(minor).\(revision)+\(build)" }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.major, lhs.minor, lhs.revision, lhs.build) < (rhs.major, rhs.minor, rhs.revision, rhs.build)
    }
}

/// `ih_flags` (design.md "Image header flags"; imgtool's `IMAGE_F`). Unknown bits are kept and shown.
public struct ImageFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let positionIndependent = ImageFlags(rawValue: 0x0000_0001)
    public static let encryptedAES128 = ImageFlags(rawValue: 0x0000_0004)
    public static let encryptedAES256 = ImageFlags(rawValue: 0x0000_0008)
    public static let nonBootable = ImageFlags(rawValue: 0x0000_0010)
    public static let ramLoad = ImageFlags(rawValue: 0x0000_0020)
    public static let romFixed = ImageFlags(rawValue: 0x0000_0100)
    public static let compressedLZMA1 = ImageFlags(rawValue: 0x0000_0200)
    public static let compressedLZMA2 = ImageFlags(rawValue: 0x0000_0400)
    public static let compressedARMThumb = ImageFlags(rawValue: 0x0000_0800)

    /// The flags' names as imgtool spells them (`IMAGE_F`), then any unknown bits in hex.
    public var names: [String] {
        let known: [(ImageFlags, String)] = [
            (.positionIndependent, "PIC"), (.encryptedAES128, "ENCRYPTED_AES128"), (.encryptedAES256, "ENCRYPTED_AES256"),
            (.nonBootable, "NON_BOOTABLE"), (.ramLoad, "RAM_LOAD"), (.romFixed, "ROM_FIXED"),
            (.compressedLZMA1, "COMPRESSED_LZMA1"), (.compressedLZMA2, "COMPRESSED_LZMA2"),
            (.compressedARMThumb, "COMPRESSED_ARM_THUMB"),
        ]
        var names = known.filter { contains($0.0) }.map(\.1)
        let unknown = rawValue & ~known.reduce(0) { $0 | $1.0.rawValue }
        if unknown != 0 { names.append("0x" + String(unknown, radix: 16)) }
        return names
    }
}
