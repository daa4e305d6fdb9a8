import TetherDeviceModel
import Foundation
import LinkProtocol

/// What the emulated device is and what it does during a run.
public struct PeripheralConfiguration: Sendable {
    /// The controller the peripheral advertises on (the central uses another one).
    public var adapter = "/org/bluez/hci0"
    public var serial = "TTH-VM-0001"
    public var localName = "Tether VM"
    public var firmware = DeviceProfile.v2_0(serial: "TTH-VM-0001")
    /// When set, the link requires an authenticated (MITM) bond and the peripheral's agent enters this passkey.
    public var passkey: UInt32?
    /// The device shows a passkey instead of entering a fixed one: its agent registers as DisplayOnly, so SMP has
    /// the central enter the number the device's kernel generated (Linux has no fixed responder passkey: smp.c
    /// draws a random one for a displaying side). Needed against tetherd, whose agent is KeyboardDisplay.
    public var showsPasskey = false
    /// Hits the device records in all, spread over the run.
    public var hits = 20
    /// The time between two hits while the device is on.
    public var hitInterval: Duration = .milliseconds(400)
    /// After this many hits were acknowledged, the device power-cycles once (boot counter + 1, link dropped,
    /// unacknowledged hits kept) and comes back after `rebootPause`.
    public var rebootAfterAcknowledged: Int?
    public var rebootPause: Duration = .seconds(3)
    /// The device finishes only after its settings changed from the ones it started with (a technician's change
    /// applied over the link), so a scenario can change settings after pairing without racing the last ACK.
    public var awaitsSettingsChange = false
    /// Hits recorded after the power cycle (before the central is back, so they wait in the store).
    public var hitsAfterReboot = 10
    /// Re-registering the advertisement this often while unconnected: BlueZ 5.66's emulator sends one advertising
    /// report per registration, lost if the central is not yet scanning (real-bluez-vm.md, pitfall 3).
    public var advertisementRefresh: Duration = .milliseconds(1500)
    /// The MCUboot image (with a SHA256 TLV, e.g. signed by imgtool) the device runs, confirmed: with it, the device
    /// also serves MCUmgr's SMP service (SMPLink), and an SMP reset reboots it as a power cycle does.
    public var smpImage: URL?
    /// After everything else, the device finishes only once it runs a new image, confirmed (an update over SMP that
    /// completed: uploaded, tested across a reset, confirmed).
    public var awaitsFirmwareUpdate = false
    /// When set, the device leaves only once this file exists (a scenario's signal that it has read what it wanted
    /// from the device), and it leaves as a device does, by powering its radio off, never by exiting with a link up:
    /// bluetoothd 5.66 then removes the services on the live link and, on a subscribe in flight, frees a notify
    /// client twice (BlueZ 476ae809a, released in 5.84).
    public var leavesAfter: URL?
    /// Where the peripheral writes one JSON line per fact (hit produced, hits released, reboot, link up/down).
    public var eventLog: URL

    public init(eventLog: URL) {
        self.eventLog = eventLog
    }
}
