import ArgumentParser
import DBus
import TetherDeviceModel
import Foundation

/// `tether-peripheral`: runs the firmware model as a real BLE peripheral through bluetoothd on the system bus.
public struct PeripheralCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tether-peripheral",
        abstract: "Run a Tether device (the firmware model) as a BLE peripheral through BlueZ.",
        discussion: """
            Registers Tether's GATT service and an LE advertisement with bluetoothd on ADAPTER, records hits on a \
            schedule, power-cycles once after --reboot-after acknowledged hits, and exits when every hit was \
            acknowledged. Each fact goes to --event-log as one JSON line. With --smp-image it also serves MCUmgr's SMP \
            service (image upload, test, confirm, reset with MCUboot's swap).
            """)

    @Option(help: "The adapter's object path.") var adapter = "/org/bluez/hci0"
    @Option(help: "The device's serial number.") var serial = "TTH-VM-0001"
    @Option(help: "Require an authenticated bond; the device's agent enters this 6-digit passkey.") var passkey: UInt32?
    @Flag(help: "With --passkey: the device shows a passkey (agent DisplayOnly; the kernel picks the number) instead of entering the fixed one.")
    var showsPasskey = false
    @Flag(help: "Finish only after the settings changed over the link (besides every hit acknowledged).")
    var awaitsSettingsChange = false
    @Option(help: "Hits recorded before the power cycle.") var hits = 20
    @Option(help: "Hits recorded after the power cycle.") var hitsAfterReboot = 10
    @Option(help: "Milliseconds between hits.") var hitIntervalMilliseconds = 400
    @Option(help: "Power-cycle once after this many hits were acknowledged (0: never).") var rebootAfter = 10
    @Option(help: "Also serve MCUmgr's SMP service, running this MCUboot image (signed, with a SHA256 TLV) confirmed; an SMP reset reboots the device.")
    var smpImage: String?
    @Flag(help: "With --smp-image: finish only once the device runs another image, confirmed (an update completed).")
    var awaitsFirmwareUpdate = false
    @Option(help: "Leave only once this file exists, by powering the adapter off (not by exiting with a link up).")
    var leavesAfter: String?
    @Option(help: "Where to write the JSON-lines event log.") var eventLog: String

    public init() {}

    public func validate() throws {
        if let passkey, passkey > 999_999 { throw ValidationError("--passkey must be at most 999999, not \(passkey)") }
        if showsPasskey, passkey == nil { throw ValidationError("--shows-passkey needs --passkey (the device requires an authenticated bond)") }
        if hits < 0 || hitsAfterReboot < 0 { throw ValidationError("hit counts must not be negative") }
        if awaitsFirmwareUpdate, smpImage == nil { throw ValidationError("--awaits-firmware-update needs --smp-image (the device has no SMP service without it)") }
        if rebootAfter > hits { throw ValidationError("--reboot-after (\(rebootAfter)) cannot exceed --hits (\(hits))") }
    }

    public func run() async throws {
        var configuration = PeripheralConfiguration(eventLog: URL(fileURLWithPath: eventLog))
        configuration.adapter = adapter
        configuration.serial = serial
        configuration.localName = "Tether \(serial.suffix(4))"
        configuration.firmware = .v2_0(serial: serial)
        configuration.passkey = passkey
        configuration.showsPasskey = showsPasskey
        configuration.awaitsSettingsChange = awaitsSettingsChange
        configuration.hits = hits
        configuration.hitsAfterReboot = hitsAfterReboot
        configuration.hitInterval = .milliseconds(hitIntervalMilliseconds)
        configuration.rebootAfterAcknowledged = rebootAfter > 0 ? rebootAfter : nil
        configuration.smpImage = smpImage.map { URL(fileURLWithPath: $0) }
        configuration.awaitsFirmwareUpdate = awaitsFirmwareUpdate
        configuration.leavesAfter = leavesAfter.map { URL(fileURLWithPath: $0) }
        let connection = try await DBusConnection.connect(to: .system)
        let peripheral = try Peripheral(configuration: configuration, connection: connection)
        try await peripheral.run()
        await connection.close()
    }
}
