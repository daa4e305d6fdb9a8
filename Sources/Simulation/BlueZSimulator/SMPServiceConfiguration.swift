import Foundation
import SMPDeviceModel

/// A simulated device's MCUmgr SMP service (`devices[].smp` in the JSON configuration): the image it runs and the
/// Zephyr settings that shape its SMP Bluetooth transport. A device with it offers the SMP GATT service beside its
/// other services (`SimulatedDevice+SMP`), backed by the pure `SMPDevice` model (SMPDeviceModel).
///
///     "smp": {"image": "/path/factory.img", "bufSize": 1024, "bufCount": 4, "slotSize": 393216, "reassembly": true,
///             "flash": "nrf52840"}
public struct SMPServiceConfiguration: Codable, Hashable, Sendable {
    /// The MCUboot image (with a SHA256 TLV, e.g. signed by imgtool) the device runs, confirmed, from its primary slot.
    public var image: String
    /// CONFIG_MCUMGR_TRANSPORT_NETBUF_SIZE: the largest request the device takes (`buf_size` in MCUmgr parameters).
    public var bufSize: Int = 1024
    /// CONFIG_MCUMGR_TRANSPORT_NETBUF_COUNT (`buf_count`).
    public var bufCount: Int = 4
    /// The secondary slot's size: the largest image an upload may announce.
    public var slotSize: Int = 0x6_0000
    /// CONFIG_MCUMGR_TRANSPORT_BT_REASSEMBLY: whether a request may span several writes (SMPBluetoothServer rule 1).
    public var reassembly: Bool = true
    /// How long the flash takes (`SMPDevice.FlashTiming`): the device answers a request only once its erase and
    /// writes are done. `"instant"` (the default), `"nrf52840"`, or
    /// `{"sectorSize": 4096, "eraseMillisecondsPerSector": 85, "writeMicrosecondsPerKiB": 10496}`.
    public var flash: Flash = .instant

    public struct Flash: Codable, Hashable, Sendable {
        public var sectorSize: Int
        public var eraseMillisecondsPerSector: Int
        public var writeMicrosecondsPerKiB: Int

        public init(sectorSize: Int = 4096, eraseMillisecondsPerSector: Int, writeMicrosecondsPerKiB: Int) {
            self.sectorSize = sectorSize
            self.eraseMillisecondsPerSector = eraseMillisecondsPerSector
            self.writeMicrosecondsPerKiB = writeMicrosecondsPerKiB
        }

        public static let instant = Flash(eraseMillisecondsPerSector: 0, writeMicrosecondsPerKiB: 0)
        /// `SMPDevice.FlashTiming.nRF52840`: 85 ms a 4 KiB page erase, 41 µs a 32-bit word written.
        public static let nRF52840 = Flash(eraseMillisecondsPerSector: 85, writeMicrosecondsPerKiB: 41 * 256)
        static let presets: [String: Flash] = ["instant": .instant, "nrf52840": .nRF52840]

        public init(from decoder: any Decoder) throws {
            if let name = try? decoder.singleValueContainer().decode(String.self) {
                guard let preset = Self.presets[name] else {
                    throw DecodingError.dataCorrupted(.init(
                        codingPath: decoder.codingPath,
                        debugDescription: "unknown flash \"\(name)\"; known: \(Self.presets.keys.sorted().joined(separator: ", ")), or an object"))
                }
                self = preset
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            sectorSize = try container.decodeIfPresent(Int.self, forKey: .sectorSize) ?? 4096
            eraseMillisecondsPerSector = try container.decode(Int.self, forKey: .eraseMillisecondsPerSector)
            writeMicrosecondsPerKiB = try container.decode(Int.self, forKey: .writeMicrosecondsPerKiB)
            guard sectorSize > 0, eraseMillisecondsPerSector >= 0, writeMicrosecondsPerKiB >= 0 else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: decoder.codingPath, debugDescription: "flash times must not be negative, the sector size positive"))
            }
        }

        var timing: SMPDevice.FlashTiming {
            SMPDevice.FlashTiming(
                sectorSize: sectorSize, eraseTimePerSector: .milliseconds(eraseMillisecondsPerSector),
                writeTimePerKiB: .microseconds(writeMicrosecondsPerKiB))
        }
    }

    public init(
        image: String, bufSize: Int = 1024, bufCount: Int = 4, slotSize: Int = 0x6_0000, reassembly: Bool = true, flash: Flash = .instant
    ) {
        self.image = image
        self.bufSize = bufSize
        self.bufCount = bufCount
        self.slotSize = slotSize
        self.reassembly = reassembly
        self.flash = flash
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        image = try container.decode(String.self, forKey: .image)
        bufSize = try container.decodeIfPresent(Int.self, forKey: .bufSize) ?? bufSize
        bufCount = try container.decodeIfPresent(Int.self, forKey: .bufCount) ?? bufCount
        slotSize = try container.decodeIfPresent(Int.self, forKey: .slotSize) ?? slotSize
        reassembly = try container.decodeIfPresent(Bool.self, forKey: .reassembly) ?? reassembly
        flash = try container.decodeIfPresent(Flash.self, forKey: .flash) ?? flash
    }

    public struct ImageRefused: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "smp.image \(path): \(reason)" }
    }

    /// The device model this configuration describes, its image read now. Throws when the file cannot be read or is
    /// not an MCUboot image with a SHA256 TLV (the simulator refuses to start rather than serve no image).
    func makeServer() throws -> SMPBluetoothServer {
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: image)))
        } catch {
            throw ImageRefused(path: image, reason: "cannot be read (\(error.localizedDescription))")
        }
        guard let factory = SlotImage(bytes) else { throw ImageRefused(path: image, reason: "not an MCUboot image with a SHA256 TLV") }
        let device = SMPDevice(
            configuration: SMPDevice.Configuration(bufferSize: bufSize, bufferCount: bufCount, slotSize: slotSize, flash: flash.timing),
            factoryImage: factory)
        return SMPBluetoothServer(device: device, reassembles: reassembly)
    }
}
