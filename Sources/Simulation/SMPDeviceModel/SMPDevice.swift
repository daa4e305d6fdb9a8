import CBOR
import Crypto
import SMP

/// A simulated MCUmgr device (an SMP server on Zephyr with MCUboot), pure: one request message in, at most one
/// response message out, no clock, no I/O. The UDP transport (SMPUDPDevice) and tests feed it whole messages, as
/// Zephyr's UDP transport does (one SMP message per datagram).
///
/// Commands (Zephyr "SMP OS management group", "SMP Application/software image management group"):
///  - OS: echo `{d}` → `{r}`; reset `{force?}` → `{}` then the reset (MCUbootSlots rule 3); MCUmgr parameters →
///    `{buf_size, buf_count}`; bootloader info → `{bootloader: "MCUboot"}`, query "mode" → `{mode}`.
///  - Image: state read/write (MCUbootSlots rules 4 and 5), upload, erase. Anything else: MGMT_ERR_ENOTSUP.
/// Upload follows img_mgmt.c `img_mgmt_upload` and zephyr_img_mgmt.c `img_mgmt_upload_inspect`:
///  1. Offset 0 carries `len` (and `sha`); the first chunk holds at least the 32-byte MCUboot header with its magic;
///     `len` over the slot is refused; a secondary slot in use (pending, or the image a revert goes back to) is
///     refused with IMG_MGMT_ERR_NO_FREE_SLOT.
///  2. Offset 0 with the `sha` of the unfinished upload in progress answers its offset (resume); any other offset 0
///     erases the slot and starts over.
///  3. Any other offset that is not the next byte expected is answered with the offset expected (0 when no upload
///     is in progress).
///  4. The last chunk completes the slot; `match` says whether SHA-256 of the received bytes equals `sha`.
/// The upload in progress lives in RAM: a reset forgets it.
///
/// Flash takes time (`Configuration.flash`): the device cannot answer while it erases or writes, since Zephyr's
/// img_mgmt does both inside the request's handler (`img_mgmt_upload`: the erase of the slot at offset 0 unless
/// CONFIG_IMG_ERASE_PROGRESSIVELY, then `flash_img_buffered_write` of the chunk). The model stays clockless: it
/// says how long the last request kept the flash busy (`lastBusyTime`), and the transport waits that long before it
/// sends the answer. This is what makes a client's long first-chunk time-out matter.
public struct SMPDevice: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// CONFIG_MCUMGR_TRANSPORT_NETBUF_SIZE; over UDP also the largest datagram the device takes.
        public var bufferSize: Int
        /// CONFIG_MCUMGR_TRANSPORT_NETBUF_COUNT.
        public var bufferCount: Int
        /// The secondary slot's size: the largest image it takes.
        public var slotSize: Int
        /// MCUboot's mode for bootloader info (3: swap without scratch, "swap using move").
        public var bootloaderMode: Int64
        public var flash: FlashTiming

        public init(
            bufferSize: Int = 1024, bufferCount: Int = 4, slotSize: Int = 0x6_0000, bootloaderMode: Int64 = 3, flash: FlashTiming = .instant
        ) {
            self.bufferSize = bufferSize
            self.bufferCount = bufferCount
            self.slotSize = slotSize
            self.bootloaderMode = bootloaderMode
            self.flash = flash
        }
    }

    /// How long the device's flash takes to erase and to write. The nRF52840 product specification (NVMC electrical
    /// specification): a 4 KiB page erase takes up to 85 ms and a 32-bit word write up to 41 µs, so erasing a 384 KiB
    /// slot takes about 8 s and writing a 512-byte chunk about 5 ms (`nRF52840`).
    public struct FlashTiming: Hashable, Sendable {
        public var sectorSize: Int
        public var eraseTimePerSector: Duration
        public var writeTimePerKiB: Duration

        public init(sectorSize: Int = 4096, eraseTimePerSector: Duration, writeTimePerKiB: Duration) {
            self.sectorSize = max(1, sectorSize)
            self.eraseTimePerSector = eraseTimePerSector
            self.writeTimePerKiB = writeTimePerKiB
        }

        /// No time at all (the default: most tests are about the protocol, not the flash).
        public static let instant = FlashTiming(eraseTimePerSector: .zero, writeTimePerKiB: .zero)
        public static let nRF52840 = FlashTiming(sectorSize: 4096, eraseTimePerSector: .milliseconds(85), writeTimePerKiB: .microseconds(41 * 256))

        /// Erasing `bytes` (whole sectors, as flash_area_erase does).
        public func erase(_ bytes: Int) -> Duration { eraseTimePerSector * ((bytes + sectorSize - 1) / sectorSize) }
        /// Writing `bytes`.
        public func write(_ bytes: Int) -> Duration { writeTimePerKiB * bytes / 1024 }
    }

    struct Upload: Hashable, Sendable {
        var sha: [UInt8]
        var length: Int
        var received: [UInt8]
    }

    public let configuration: Configuration
    public private(set) var slots: MCUbootSlots
    private var upload: Upload?
    /// Observations for tests: how many upload requests were answered with another offset than their own end.
    public private(set) var offsetCorrections = 0
    public private(set) var erases = 0
    /// Images (by SHA256 TLV hash) that crash at boot before anything can confirm them: when a reset swaps one in for
    /// test, its watchdog resets the device again and MCUboot reverts to the previous image (a fault to inject).
    public var crashingImages: Set<[UInt8]> = []
    /// How long the last request kept the flash busy (`Configuration.flash`): the transport answers after it.
    public private(set) var lastBusyTime: Duration = .zero

    /// `factoryImage` must be an MCUboot image (SlotImage reads it); it runs, confirmed, from the primary slot.
    public init(configuration: Configuration = Configuration(), factoryImage: SlotImage) {
        self.configuration = configuration
        self.slots = MCUbootSlots(primary: factoryImage)
    }

    /// Bytes of the unfinished upload received so far (nil when none is in progress).
    public var uploadOffset: Int? { upload?.received.count }

    /// One request message (header and body) in, its response out; nil for bytes that are not a request this device
    /// can answer at all (no header, a response, a length that disagrees): Zephyr drops those.
    public mutating func handle(_ message: [UInt8]) -> [UInt8]? {
        lastBusyTime = .zero
        guard message.count <= configuration.bufferSize, let header = try? SMPHeader(message), !header.operation.isResponse,
            message.count == SMPHeader.size + Int(header.length)
        else { return nil }
        var answer: [CBORPair]
        var resetAfterAnswer = false
        if let body = try? CBORDecoder().decode(message[SMPHeader.size...]), case .map = body {
            (answer, resetAfterAnswer) = respond(header, body)
        } else if header.length == 0 {
            (answer, resetAfterAnswer) = respond(header, .map([]))
        } else {
            answer = DeviceErrorForm.smp(.EINVAL)
        }
        let bytes = CBORValue.map(answer).encoded
        let response = SMPHeader(
            version: header.version, operation: header.operation.response, flags: 0, length: UInt16(clamping: bytes.count),
            group: header.group, sequence: header.sequence, command: header.command)
        // Zephyr's os_mgmt answers a reset first and reboots after a short delay (os_mgmt.c, `os_mgmt_reset`).
        if resetAfterAnswer { reset() }
        return response.encoded + bytes
    }

    /// A reset however caused (the command, a power cycle): MCUboot does its swap and the upload in RAM is gone.
    public mutating func reset() {
        upload = nil
        slots.reset()
        if slots.swapType == .revert, crashingImages.contains(slots.primary.hash) { slots.reset() }
    }

    private mutating func respond(_ header: SMPHeader, _ body: CBORValue) -> ([CBORPair], reset: Bool) {
        let write = header.operation == .write
        switch (header.group, header.command, write) {
        case (SMPGroup.os, SMPOSCommand.echo, true):
            guard let text = body["d"]?.textValue else { return (DeviceErrorForm.smp(.EINVAL), false) }
            return ([CBORPair(.text("r"), .text(text))], false)
        case (SMPGroup.os, SMPOSCommand.reset, true):
            return ([], true)
        case (SMPGroup.os, SMPOSCommand.parameters, false):
            return (
                [
                    CBORPair(.text("buf_size"), .unsigned(UInt64(configuration.bufferSize))),
                    CBORPair(.text("buf_count"), .unsigned(UInt64(configuration.bufferCount))),
                ], false
            )
        case (SMPGroup.os, SMPOSCommand.bootloaderInfo, false):
            if body["query"]?.textValue == "mode" { return ([CBORPair(.text("mode"), .integer(configuration.bootloaderMode))], false) }
            return ([CBORPair(.text("bootloader"), .text("MCUboot"))], false)
        case (SMPGroup.image, SMPImageCommand.state, false):
            return (stateList, false)
        case (SMPGroup.image, SMPImageCommand.state, true):
            return (stateWrite(body, version: header.version), false)
        case (SMPGroup.image, SMPImageCommand.upload, true):
            return (uploadAnswer(body, version: header.version), false)
        case (SMPGroup.image, SMPImageCommand.erase, true):
            return (erase(version: header.version), false)
        default:
            return (DeviceErrorForm.smp(.ENOTSUP), false)
        }
    }

    private var stateList: [CBORPair] {
        let images: [CBORValue] = slots.states.map { state in
            .textMap([
                "slot": .unsigned(UInt64(state.slot)), "version": .text(state.image.version), "hash": .bytes(state.image.hash),
                "bootable": .bool(state.image.bootable), "pending": .bool(state.pending), "confirmed": .bool(state.confirmed),
                "active": .bool(state.active), "permanent": .bool(state.permanent),
            ])
        }
        // img_mgmt_state.c `img_mgmt_state_read`: `splitStatus` 0 follows the list.
        return [CBORPair(.text("images"), .array(images)), CBORPair(.text("splitStatus"), .unsigned(0))]
    }

    private mutating func stateWrite(_ body: CBORValue, version: SMPVersion) -> [CBORPair] {
        let confirm = body["confirm"]?.boolValue ?? false
        let hash = body["hash"]?.bytesValue
        guard body["hash"] == nil || hash != nil else { return DeviceErrorForm.smp(.EINVAL) }
        do {
            try slots.write(hash: hash, confirm: confirm)
        } catch {
            switch error {
            case .hashNotFound: return DeviceErrorForm.image(.HASH_NOT_FOUND, version: version)
            case .testOfActiveImage: return DeviceErrorForm.image(.IMAGE_SETTING_TEST_TO_ACTIVE_DENIED, version: version)
            case .confirmationDenied: return DeviceErrorForm.image(.IMAGE_CONFIRMATION_DENIED, version: version)
            }
        }
        return stateList
    }

    private mutating func erase(version: SMPVersion) -> [CBORPair] {
        guard !slots.secondaryInUse else { return DeviceErrorForm.image(.NO_FREE_SLOT, version: version) }
        erases += 1
        upload = nil
        slots.secondaryErased()
        lastBusyTime += configuration.flash.erase(configuration.slotSize)
        return []
    }

    private func offset(_ value: Int) -> [CBORPair] { [CBORPair(.text("off"), .unsigned(UInt64(value)))] }

    private mutating func uploadAnswer(_ body: CBORValue, version: SMPVersion) -> [CBORPair] {
        guard let offsetValue = body["off"]?.unsignedValue, let data = body["data"]?.bytesValue, let offset = Int(exactly: offsetValue)
        else { return DeviceErrorForm.smp(.EINVAL) }
        if offset == 0 {
            // Rule 1.
            guard let lengthValue = body["len"]?.unsignedValue, let length = Int(exactly: lengthValue) else {
                return DeviceErrorForm.image(.INVALID_LENGTH, version: version)
            }
            guard data.count >= 32 else { return DeviceErrorForm.image(.INVALID_IMAGE_HEADER, version: version) }
            guard data[0] == 0x3D, data[1] == 0xB8, data[2] == 0xF3, data[3] == 0x96 else {
                return DeviceErrorForm.image(.INVALID_IMAGE_HEADER_MAGIC, version: version)
            }
            guard length <= configuration.slotSize else { return DeviceErrorForm.image(.INVALID_IMAGE_TOO_LARGE, version: version) }
            guard !slots.secondaryInUse else { return DeviceErrorForm.image(.NO_FREE_SLOT, version: version) }
            let sha = body["sha"]?.bytesValue ?? []
            // Rule 2.
            if let upload, !sha.isEmpty, upload.sha == sha, upload.length == length, !upload.received.isEmpty {
                if upload.received.count != data.count { offsetCorrections += 1 }
                return self.offset(upload.received.count)
            }
            erases += 1
            slots.secondaryErased()
            // img_mgmt erases what the image will occupy (`img_mgmt_erase_if_needed` over `len`) before the first write.
            lastBusyTime += configuration.flash.erase(length)
            upload = Upload(sha: sha, length: length, received: [])
        }
        // Rule 3.
        guard var current = upload else {
            // No upload in progress (after a reset): the offset expected is 0.
            offsetCorrections += 1
            return self.offset(0)
        }
        guard offset == current.received.count else {
            offsetCorrections += 1
            return self.offset(current.received.count)
        }
        guard offset + data.count <= current.length else { return DeviceErrorForm.image(.INVALID_IMAGE_DATA_OVERRUN, version: version) }
        current.received += data
        lastBusyTime += configuration.flash.write(data.count)
        guard current.received.count == current.length else {
            upload = current
            return self.offset(current.received.count)
        }
        // Rule 4.
        upload = nil
        slots.secondaryWritten(SlotImage(current.received))
        var answer = self.offset(current.length)
        if !current.sha.isEmpty { answer.append(CBORPair(.text("match"), .bool(Array(SHA256.hash(data: current.received)) == current.sha))) }
        return answer
    }
}
