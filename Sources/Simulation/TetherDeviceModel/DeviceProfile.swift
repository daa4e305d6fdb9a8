import LinkProtocol
import TetherSettings

/// What a firmware build is: identity, protocol versions and behaviour knobs of the device model.
public struct DeviceProfile: Hashable, Sendable {
    public var serial: String
    public var hardwareRevision: UInt8 = 3
    public var firmware: FirmwareVersion
    public var versions: ClosedRange<UInt8>
    public var capabilities: DeviceCapabilities = [.battery, .haptics, .led, .sleep]
    /// Events kept until ACKed, in non-volatile memory (§8.1). When full, new events are refused and counted.
    public var eventStoreCapacity = 1024
    /// The most reliable frames in flight; the gateway's HELLO window caps it further (§8.6).
    public var window = 8
    /// §8.4.
    public var initialRetransmissionTimeout: Duration = .milliseconds(1000)
    public var maximumRetransmissionTimeout: Duration = .seconds(8)
    /// §8.5: no retransmission sooner than this after `storageFull`.
    public var storageFullBackoff: Duration = .seconds(30)
    /// §7.7: disconnect this long after SLEEP if no ACK comes.
    public var sleepGrace: Duration = .seconds(2)
    /// A firmware newer than the gateway: sends one reliable frame of type 0x13 (a diagnostics record the gateway
    /// does not know) after DEVICE_INFO, to prove §6.6.
    public var sendsUnknownDiagnostics = false
    public var initialConfig = DeviceConfig(version: 1, settings: DeviceSettings(sensitivity: 5, ledBrightness: 60, hapticFeedback: true, sleepTimeoutSeconds: 300, dailyLimit: 0))

    public init(serial: String, firmware: FirmwareVersion, versions: ClosedRange<UInt8>) {
        self.serial = serial
        self.firmware = firmware
        self.versions = versions
    }

    /// Firmware 1.0: protocol 1 only, no sleep support.
    public static func v1_0(serial: String) -> DeviceProfile {
        var profile = DeviceProfile(serial: serial, firmware: FirmwareVersion(major: 1, minor: 0, patch: 3), versions: 1...1)
        profile.capabilities = [.battery, .led]
        return profile
    }

    /// Firmware 1.4: protocol 1, larger event store, haptics and sleep.
    public static func v1_4(serial: String) -> DeviceProfile {
        var profile = DeviceProfile(serial: serial, firmware: FirmwareVersion(major: 1, minor: 4, patch: 2), versions: 1...1)
        profile.eventStoreCapacity = 4096
        return profile
    }

    /// Firmware 2.0: protocols 1 and 2 (32-bit event sequence), and a diagnostics message the gateway does not know.
    public static func v2_0(serial: String) -> DeviceProfile {
        var profile = DeviceProfile(serial: serial, firmware: FirmwareVersion(major: 2, minor: 0, patch: 1), versions: 1...2)
        profile.eventStoreCapacity = 8192
        profile.window = 16
        profile.sendsUnknownDiagnostics = true
        return profile
    }
}
