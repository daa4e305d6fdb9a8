import Foundation
import SMPDeviceModel
import SMPUDPDevice

/// A simulated MCUmgr device on a loopback UDP port the kernel picks, running the committed imgtool fixture
/// ed25519-hash.img (Tests/MCUbootImageTests/make-images.sh: -v 1.2.3+4).
enum SimulatedDevice {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/MCUbootImageTests/Fixtures")

    static func image(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: fixtures.appendingPathComponent(name + ".img")))
    }

    static func start(bufferSize: Int = 1024, bufferCount: Int = 4, flash: SMPDevice.FlashTiming = .instant) throws -> SMPUDPDeviceServer {
        guard let factory = SlotImage(try image("ed25519-hash")) else { throw NotAnImage() }
        let server = try SMPUDPDeviceServer(
            device: SMPDevice(configuration: .init(bufferSize: bufferSize, bufferCount: bufferCount, flash: flash), factoryImage: factory),
            host: "127.0.0.1", port: 0)
        server.start()
        return server
    }

    struct NotAnImage: Error {}

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
