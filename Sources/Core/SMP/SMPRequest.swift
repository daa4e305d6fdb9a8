import CBOR

/// One SMP request: where it goes (operation, group, command) and its CBOR body. The commands this client speaks
/// are the static builders (Zephyr "SMP OS management group", "SMP Application/software image management group").
///
/// Bodies are maps with their keys in RFC 8949 §4.2.1 order (bytewise by encoded key), so that the same request
/// always encodes to the same bytes (the smp package encodes with cbor2's canonical order, which agrees for these
/// short text keys).
public struct SMPRequest: Hashable, Sendable {
    public var operation: SMPOperation
    public var group: UInt16
    public var command: UInt8
    public var body: CBORValue

    public init(operation: SMPOperation, group: UInt16, command: UInt8, body: [CBORPair]) {
        self.operation = operation
        self.group = group
        self.command = command
        self.body = .map(body.sorted { $0.key.encoded.lexicographicallyPrecedes($1.key.encoded) })
    }

    /// Header and body, ready to be written.
    public func encoded(version: SMPVersion, sequence: UInt8) -> [UInt8] {
        let body = self.body.encoded
        let header = SMPHeader(
            version: version, operation: operation, length: UInt16(clamping: body.count), group: group, sequence: sequence,
            command: command)
        return header.encoded + body
    }

    /// Bytes of header plus body.
    public var encodedSize: Int { SMPHeader.size + body.encoded.count }

    // MARK: OS group

    /// Echo `{d}` → `{r}`.
    public static func echo(_ text: String) -> SMPRequest {
        SMPRequest(operation: .write, group: SMPGroup.os, command: SMPOSCommand.echo, body: [CBORPair(.text("d"), .text(text))])
    }

    /// Reset `{force?, boot_mode?}`: `force` 1 resets even when an application hook would refuse.
    public static func reset(force: Bool = false, bootMode: UInt8? = nil) -> SMPRequest {
        var body: [CBORPair] = []
        if force { body.append(CBORPair(.text("force"), .unsigned(1))) }
        if let bootMode { body.append(CBORPair(.text("boot_mode"), .unsigned(UInt64(bootMode)))) }
        return SMPRequest(operation: .write, group: SMPGroup.os, command: SMPOSCommand.reset, body: body)
    }

    /// MCUmgr parameters (read) → `{buf_size, buf_count}`. (Computed, as every builder here: a global holding an
    /// indirect CBORValue keeps its box behind a tagged pointer, which LeakSanitizer reports as leaked.)
    public static var parameters: SMPRequest {
        SMPRequest(operation: .read, group: SMPGroup.os, command: SMPOSCommand.parameters, body: [])
    }

    /// Bootloader information (read), `{query?}`: no query → `{bootloader}`; query "mode" → `{mode, no-downgrade?}`.
    public static func bootloaderInfo(query: String? = nil) -> SMPRequest {
        SMPRequest(
            operation: .read, group: SMPGroup.os, command: SMPOSCommand.bootloaderInfo,
            body: query.map { [CBORPair(.text("query"), .text($0))] } ?? [])
    }

    // MARK: Image group

    /// Image state (read) → `{images: [...]}`.
    public static var imageState: SMPRequest {
        SMPRequest(operation: .read, group: SMPGroup.image, command: SMPImageCommand.state, body: [])
    }

    /// Image state (write) `{hash?, confirm}`: `confirm` false marks the image with `hash` for test; true confirms it
    /// (or the running image when `hash` is nil). Answered with the new state list.
    public static func imageStateWrite(hash: [UInt8]?, confirm: Bool) -> SMPRequest {
        var body = [CBORPair(.text("confirm"), .bool(confirm))]
        if let hash { body.append(CBORPair(.text("hash"), .bytes(hash))) }
        return SMPRequest(operation: .write, group: SMPGroup.image, command: SMPImageCommand.state, body: body)
    }

    /// Image upload (write) → `{off, match?}`.
    public static func imageUpload(_ chunk: SMPUploadChunk) -> SMPRequest {
        var body = [CBORPair(.text("off"), .unsigned(UInt64(chunk.offset))), CBORPair(.text("data"), .bytes(Array(chunk.data)))]
        if let first = chunk.first {
            // Only the first chunk (off 0) names the image, its length and hash, and the upgrade-only flag.
            body.append(CBORPair(.text("len"), .unsigned(UInt64(first.length))))
            body.append(CBORPair(.text("sha"), .bytes(first.sha)))
            if first.image != 0 { body.append(CBORPair(.text("image"), .unsigned(UInt64(first.image)))) }
            if let upgrade = first.upgrade { body.append(CBORPair(.text("upgrade"), .bool(upgrade))) }
        }
        return SMPRequest(operation: .write, group: SMPGroup.image, command: SMPImageCommand.upload, body: body)
    }

    /// Image erase (write) `{slot?}`: erases the secondary slot (or the one named).
    public static func imageErase(slot: UInt32? = nil) -> SMPRequest {
        SMPRequest(
            operation: .write, group: SMPGroup.image, command: SMPImageCommand.erase,
            body: slot.map { [CBORPair(.text("slot"), .unsigned(UInt64($0)))] } ?? [])
    }
}

/// One chunk of an image upload: its offset and data, and for the chunk at offset 0 the fields only it carries.
public struct SMPUploadChunk: Hashable, Sendable {
    public struct FirstChunkFields: Hashable, Sendable {
        /// The image number (0 for the application image; omitted from the request when 0).
        public var image: UInt32
        /// The whole image's length in bytes.
        public var length: Int
        /// SHA-256 of the whole file being uploaded: the device's resume key (same sha → it answers its offset).
        public var sha: [UInt8]
        /// true: the device refuses an image whose version is not newer.
        public var upgrade: Bool?

        public init(image: UInt32 = 0, length: Int, sha: [UInt8], upgrade: Bool? = nil) {
            self.image = image
            self.length = length
            self.sha = sha
            self.upgrade = upgrade
        }
    }

    public var offset: Int
    public var data: ArraySlice<UInt8>
    public var first: FirstChunkFields?

    public init(offset: Int, data: ArraySlice<UInt8>, first: FirstChunkFields? = nil) {
        self.offset = offset
        self.data = data
        self.first = first
    }
}
