import Foundation
import SMPDeviceModel

/// A simulated device's MCUmgr SMP service (`devices[].smp` in the JSON configuration): the image it runs and the
/// Zephyr settings that shape its SMP Bluetooth transport. A device with it offers the SMP GATT service beside its
/// other services (`SimulatedDevice+SMP`), backed by the pure `SMPDevice` model (SMPDeviceModel).
///
///     "smp": {"image": "/path/factory.img", "bufSize": 1024, "bufCount": 4, "slotSize": 393216, "reassembly": true}
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

    public init(image: String, bufSize: Int = 1024, bufCount: Int = 4, slotSize: Int = 0x6_0000, reassembly: Bool = true) {
        self.image = image
        self.bufSize = bufSize
        self.bufCount = bufCount
        self.slotSize = slotSize
        self.reassembly = reassembly
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        image = try container.decode(String.self, forKey: .image)
        bufSize = try container.decodeIfPresent(Int.self, forKey: .bufSize) ?? bufSize
        bufCount = try container.decodeIfPresent(Int.self, forKey: .bufCount) ?? bufCount
        slotSize = try container.decodeIfPresent(Int.self, forKey: .slotSize) ?? slotSize
        reassembly = try container.decodeIfPresent(Bool.self, forKey: .reassembly) ?? reassembly
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
            configuration: SMPDevice.Configuration(bufferSize: bufSize, bufferCount: bufCount, slotSize: slotSize), factoryImage: factory)
        return SMPBluetoothServer(device: device, reassembles: reassembly)
    }
}
