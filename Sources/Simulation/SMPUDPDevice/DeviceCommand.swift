import ArgumentParser
import Foundation
import SMPDeviceModel

/// `tether-smp-device`: the simulated MCUmgr device on a UDP port, for trying `tether firmware --udp` or smpmgr by
/// hand (tests start SMPUDPDeviceServer in process).
public struct SMPDeviceCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tether-smp-device",
        abstract: "Serve a simulated MCUmgr (SMP) device with MCUboot's two slots over UDP.",
        discussion: """
            The device runs IMAGE (an MCUboot image, e.g. one signed by imgtool), confirmed, from its primary slot. It \
            answers echo, MCUmgr parameters, bootloader info, image state read/write, upload (with resume), erase and \
            reset, with MCUboot's test/confirm/revert swap at each reset. smpmgr: `smpmgr --ip HOST image state-read` \
            (smpclient always uses port 1337).
            """)

    @Option(help: "The address to bind.") var host = "127.0.0.1"
    @Option(help: "The UDP port (Zephyr's default is 1337).") var port: UInt16 = SMPUDPDeviceServer.defaultPort
    @Option(help: "buf_size: the largest SMP message the device takes.") var bufSize = 1024
    @Option(help: "buf_count: how many receive buffers the device reports.") var bufCount = 4
    @Flag(help: "Take an nRF52840's flash time to erase the slot and write each chunk (no answer meanwhile).") var nrf52840Flash = false
    @Argument(help: "The MCUboot image the device runs at start.") var image: String

    public init() {}

    public func run() throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: image)))
        guard let factory = SlotImage(bytes) else { throw ValidationError("\(image) is not an MCUboot image with a SHA256 TLV") }
        let device = SMPDevice(configuration: SMPDevice.Configuration(bufferSize: bufSize, bufferCount: bufCount, flash: nrf52840Flash ? .nRF52840 : .instant), factoryImage: factory)
        let server = try SMPUDPDeviceServer(device: device, host: host, port: port)
        FileHandle.standardOutput.write(Data("tether-smp-device: serving \(factory.version) on \(host):\(server.port)\n".utf8))
        server.serve()
    }
}
