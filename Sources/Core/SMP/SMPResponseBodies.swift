import CBOR

// The typed answers of the commands SMPRequest sends. Each reads only its own keys: unknown keys are skipped, and a
// known key of the wrong type is the device's protocol error (SMPDecodeError.invalidField naming it).

/// Echo's answer `{r}`.
public struct SMPEchoResponse: Hashable, Sendable {
    public var text: String
    public init(text: String) { self.text = text }
    public init(body: CBORValue) throws(SMPDecodeError) { text = try required("r", body["r"]?.textValue) }
}

/// MCUmgr parameters `{buf_size, buf_count}`: the size of the device's SMP receive buffers and how many it has.
public struct SMPParameters: Hashable, Sendable {
    public var bufferSize: Int
    public var bufferCount: Int

    public init(bufferSize: Int, bufferCount: Int) {
        self.bufferSize = bufferSize
        self.bufferCount = bufferCount
    }

    public init(body: CBORValue) throws(SMPDecodeError) {
        let size = try required("buf_size", body["buf_size"]?.unsignedValue)
        let count = try required("buf_count", body["buf_count"]?.unsignedValue)
        // A buffer too small to hold a header, or absurd sizes, are the device's error, not a crash later.
        guard size >= UInt64(SMPHeader.size), size <= 65_535 + UInt64(SMPHeader.size) else { throw .field("buf_size") }
        guard count >= 1, count <= 255 else { throw .field("buf_count") }
        self.init(bufferSize: Int(size), bufferCount: Int(count))
    }
}

/// Bootloader information: `{bootloader}` without a query; `{mode, no-downgrade?}` for query "mode" (MCUboot's
/// mode: 0 single application, 1 swap using scratch, 2 overwrite-only, 3 swap without scratch, 4 direct-XIP
/// without revert, 5 direct-XIP with revert, 6 RAM loader; -1 unknown).
public struct SMPBootloaderInfo: Hashable, Sendable {
    public var bootloader: String?
    public var mode: Int64?
    public var noDowngrade: Bool?

    public init(bootloader: String? = nil, mode: Int64? = nil, noDowngrade: Bool? = nil) {
        self.bootloader = bootloader
        self.mode = mode
        self.noDowngrade = noDowngrade
    }

    public init(body: CBORValue) throws(SMPDecodeError) {
        bootloader = try optional("bootloader", body["bootloader"]?.textValue, body["bootloader"])
        mode = try optional("mode", body["mode"]?.integerValue, body["mode"])
        noDowngrade = try optional("no-downgrade", body["no-downgrade"]?.boolValue, body["no-downgrade"])
    }
}

/// One slot of image state (`images[]`). `hash` is the image's SHA256 TLV (what MCUboot verifies), not the hash of
/// the uploaded file. Flags absent from the answer are false.
public struct SMPImageSlotState: Hashable, Sendable {
    public var image: UInt32
    public var slot: UInt32
    public var version: String
    public var hash: [UInt8]?
    public var bootable = false
    public var pending = false
    public var confirmed = false
    public var active = false
    public var permanent = false

    public init(image: UInt32 = 0, slot: UInt32, version: String, hash: [UInt8]? = nil) {
        self.image = image
        self.slot = slot
        self.version = version
        self.hash = hash
    }

    init(body: CBORValue) throws(SMPDecodeError) {
        let image = try optional("image", body["image"]?.unsignedValue, body["image"]) ?? 0
        let slot = try required("slot", body["slot"]?.unsignedValue)
        guard let image = UInt32(exactly: image) else { throw .field("image") }
        guard let slot = UInt32(exactly: slot) else { throw .field("slot") }
        self.init(
            image: image, slot: slot, version: try required("version", body["version"]?.textValue),
            hash: try optional("hash", body["hash"]?.bytesValue, body["hash"]))
        bootable = try flag("bootable", body)
        pending = try flag("pending", body)
        confirmed = try flag("confirmed", body)
        active = try flag("active", body)
        permanent = try flag("permanent", body)
    }

    private func flag(_ name: String, _ body: CBORValue) throws(SMPDecodeError) -> Bool {
        try optional(name, body[name]?.boolValue, body[name]) ?? false
    }
}

/// Image state `{images: [...], splitStatus?}` (the answer to a state read and to a state write).
public struct SMPImageState: Hashable, Sendable {
    public var images: [SMPImageSlotState]

    public init(images: [SMPImageSlotState]) { self.images = images }

    public init(body: CBORValue) throws(SMPDecodeError) {
        let list = try required("images", body["images"]?.arrayValue)
        var images: [SMPImageSlotState] = []
        for entry in list {
            guard case .map = entry else { throw .field("images[]") }
            images.append(try SMPImageSlotState(body: entry))
        }
        self.init(images: images)
    }
}

/// Image upload's answer `{off, match?}`: the offset of the next byte the device wants (the image length when it
/// has all of it), and on the last chunk whether the image's hash matched `sha`.
public struct SMPUploadResponse: Hashable, Sendable {
    public var offset: Int
    public var match: Bool?

    public init(offset: Int, match: Bool? = nil) {
        self.offset = offset
        self.match = match
    }

    public init(body: CBORValue) throws(SMPDecodeError) {
        let offset = try required("off", body["off"]?.unsignedValue)
        guard let offset = Int(exactly: offset), offset <= Int(UInt32.max) else { throw .field("off") }
        self.init(offset: offset, match: try optional("match", body["match"]?.boolValue, body["match"]))
    }
}
