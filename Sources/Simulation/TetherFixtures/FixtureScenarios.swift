import LinkProtocol
import TetherDeviceModel
import TetherReplay
import TetherPrimitives
import TetherSettings

/// The sessions recorded into `Firmware-fixtures/`: each a firmware build, a link with or without faults, and a
/// script of what the user and the device do. Recording runs the firmware model against the gateway session in a
/// `LinkPair`; the transcripts are then kept as fixed files (see `tether-fixtures`).
public struct FixtureScenario: Sendable {
    public var name: String
    public var summary: String
    public var profile: DeviceProfile
    public var configuration: LinkPair.Configuration
    public var seed: UInt64
    public var driftPPM: Double
    public var duration: Duration
    /// Whether every event the firmware recorded must end up stored (false where the scenario refuses service).
    public var expectsDelivery: Bool
    public var script: @Sendable (inout LinkPair, Timestamp) -> Void

    /// 2026-11-01T08:00:00Z.
    public static let start = Timestamp(nanoseconds: (1_793_491_200 + 8 * 3600) * 1_000_000_000)

    public init(name: String, summary: String, profile: DeviceProfile, configuration: LinkPair.Configuration = LinkPair.Configuration(), seed: UInt64, driftPPM: Double = 0, duration: Duration, expectsDelivery: Bool = true, script: @escaping @Sendable (inout LinkPair, Timestamp) -> Void) {
        self.name = name
        self.summary = summary
        self.profile = profile
        self.configuration = configuration
        self.seed = seed
        self.driftPPM = driftPPM
        self.duration = duration
        self.expectsDelivery = expectsDelivery
        self.script = script
    }

    /// Runs the scenario and returns its transcript and the finished pair (for checks).
    public func record() -> (Transcript, LinkPair) {
        var pair = LinkPair(firmware: profile, configuration: configuration, seed: seed, start: Self.start, driftPPM: driftPPM)
        script(&pair, Self.start)
        pair.run(until: Self.start.advanced(by: duration))
        let transcript = Transcript(
            firmware: profile.firmware.description, start: Self.start, storeLatency: configuration.persistLatency,
            comments: ["\(name): \(summary)", "Recorded from the firmware model (seed \(seed)); a fixed file from then on."],
            entries: pair.transcript, end: pair.now)
        return (transcript, pair)
    }

    public static let all: [FixtureScenario] = [
        FixtureScenario(name: "fw1.0-normal-mtu23", summary: "firmware 1.0 at the minimum MTU: handshake, time sync, 30 hits, battery", profile: .v1_0(serial: "TT10-000101"), configuration: config(mtu: 23, jitter: 4), seed: 101, driftPPM: 12, duration: .seconds(40)) { pair, start in
            pair.scheduleHits(count: 30, every: .milliseconds(700), from: start.advanced(by: .seconds(2)))
            pair.schedule(.battery(BatteryStatus(millivolts: 3870, percent: 71, isCharging: false)), at: start.advanced(by: .seconds(5)))
        },
        FixtureScenario(name: "fw1.4-normal-mtu247", summary: "firmware 1.4 at MTU 247: 50 hits and a settings change round trip", profile: .v1_4(serial: "TT14-000201"), configuration: config(mtu: 247, jitter: 3, desired: DeviceConfig(version: 2, settings: DeviceSettings(sensitivity: 7, ledBrightness: 40))), seed: 201, driftPPM: -20, duration: .seconds(30)) { pair, start in
            pair.scheduleHits(count: 50, every: .milliseconds(300), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw2.0-normal-v2", summary: "firmware 2.0 negotiates protocol 2 (32-bit event sequence) and sends a message type this gateway does not know", profile: .v2_0(serial: "TT20-000301"), configuration: config(mtu: 185, jitter: 3), seed: 301, driftPPM: 30, duration: .seconds(30)) { pair, start in
            pair.scheduleHits(count: 40, every: .milliseconds(400), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw2.0-unknown-type-mtu23", summary: "firmware 2.0 at MTU 23: DEVICE_INFO spans two notifications; unknown type 0x13 is NACKed and released", profile: .v2_0(serial: "TT20-000302"), configuration: config(mtu: 23, jitter: 2), seed: 302, duration: .seconds(20)) { pair, start in
            pair.scheduleHits(count: 10, every: .milliseconds(500), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw1.4-lost-ack", summary: "half of the gateway's writes are lost for 15 s and the link drops three times: the device retransmits, on the same link and the next, and the gateway re-ACKs without storing twice", profile: .v1_4(serial: "TT14-000401"), configuration: config(mtu: 23, jitter: 3, gatewayToDevice: ChannelFaults(drop: 0.5)), seed: 401, duration: .seconds(80)) { pair, start in
            pair.scheduleHits(count: 30, every: .milliseconds(1500), from: start.advanced(by: .seconds(1)))
            for second in [8, 14, 20] { pair.schedule(.linkLoss, at: start.advanced(by: .milliseconds(Int64(second) * 1000 + 30))) }
            pair.schedule(.setFaults(deviceToGateway: .none, gatewayToDevice: .none), at: start.advanced(by: .seconds(15)))
        },
        FixtureScenario(name: "fw1.4-duplicates", summary: "a quarter of the device's notifications arrive twice", profile: .v1_4(serial: "TT14-000501"), configuration: config(mtu: 23, jitter: 3, deviceToGateway: ChannelFaults(duplicate: 0.25)), seed: 501, duration: .seconds(40)) { pair, start in
            pair.scheduleHits(count: 40, every: .milliseconds(350), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw1.4-reboot-midstream", summary: "the device reboots with unacknowledged events; events of boot 2 recorded before its first anchor get UTC later", profile: .v1_4(serial: "TT14-000601"), configuration: config(mtu: 23, jitter: 3), seed: 601, driftPPM: 25, duration: .seconds(60)) { pair, start in
            pair.scheduleHits(count: 40, every: .milliseconds(250), from: start.advanced(by: .seconds(1)))
            pair.schedule(.setFaults(deviceToGateway: ChannelFaults(drop: 0.6), gatewayToDevice: .none), at: start.advanced(by: .seconds(5)))
            pair.schedule(.reboot, at: start.advanced(by: .seconds(8)))
            pair.schedule(.setFaults(deviceToGateway: .none, gatewayToDevice: .none), at: start.advanced(by: .milliseconds(8001)))
        },
        FixtureScenario(name: "fw1.0-bad-crc", summary: "8% of the device's notifications have a flipped bit: NACK badCRC, retransmission", profile: .v1_0(serial: "TT10-000701"), configuration: config(mtu: 23, jitter: 3, deviceToGateway: ChannelFaults(corrupt: 0.08)), seed: 701, duration: .seconds(60)) { pair, start in
            pair.scheduleHits(count: 30, every: .milliseconds(500), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw1.4-truncated", summary: "8% of the device's notifications lose their tail: truncated frames are found and NACKed", profile: .v1_4(serial: "TT14-000801"), configuration: config(mtu: 23, jitter: 3, deviceToGateway: ChannelFaults(truncate: 0.08)), seed: 801, duration: .seconds(60)) { pair, start in
            pair.scheduleHits(count: 30, every: .milliseconds(500), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw1.4-fragmentation-mtu23", summary: "values split and merged at random points in both directions at MTU 23", profile: .v1_4(serial: "TT14-000901"), configuration: config(mtu: 23, jitter: 3, deviceToGateway: ChannelFaults(rechunk: 0.6), gatewayToDevice: ChannelFaults(rechunk: 0.6), desired: DeviceConfig(version: 5, settings: DeviceSettings(sensitivity: 3, hapticFeedback: false, sleepTimeoutSeconds: 600, dailyLimit: 150))), seed: 901, duration: .seconds(30)) { pair, start in
            pair.scheduleHits(count: 40, every: .milliseconds(300), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw1.4-timesync-asymmetric", summary: "notifications take 80 ms, writes 10 ms: anchors stay within their RTT/2 uncertainty", profile: .v1_4(serial: "TT14-001001"), configuration: config(mtu: 247, jitter: 20, toGatewayMs: 80, toDeviceMs: 10), seed: 1001, driftPPM: -40, duration: .seconds(30)) { pair, start in
            pair.scheduleHits(count: 20, every: .milliseconds(900), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw1.4-clock-drift-4h", summary: "a device clock 85 ppm fast over four hours: a burst every 10 minutes keeps event times honest", profile: .v1_4(serial: "TT14-001101"), configuration: config(mtu: 247, jitter: 6), seed: 1101, driftPPM: 85, duration: .seconds(4 * 3600 + 60)) { pair, start in
            pair.scheduleHits(count: 80, every: .seconds(180), from: start.advanced(by: .seconds(30)))
        },
        FixtureScenario(name: "fw1.0-storage-full", summary: "the gateway's store is full for 6 s: NACK storageFull, the device keeps its events and retries after 30 s", profile: .v1_0(serial: "TT10-001201"), configuration: config(mtu: 23, jitter: 3), seed: 1201, duration: .seconds(70)) { pair, start in
            pair.scheduleHits(count: 30, every: .milliseconds(300), from: start.advanced(by: .seconds(1)))
            pair.schedule(.storageFull(for: .seconds(6)), at: start.advanced(by: .seconds(3)))
        },
        FixtureScenario(name: "fw3.0-incompatible", summary: "a future firmware that speaks only protocol 3: NACK unsupportedVersion, the gateway disconnects and backs off", profile: DeviceProfile(serial: "TT30-001301", firmware: FirmwareVersion(major: 3, minor: 0, patch: 0), versions: 3...3), configuration: config(mtu: 247, jitter: 3), seed: 1301, duration: .seconds(12), expectsDelivery: false) { pair, start in
            pair.scheduleHits(count: 3, every: .seconds(1), from: start.advanced(by: .seconds(1)))
        },
        FixtureScenario(name: "fw1.4-sleep", summary: "the device reports battery, sleeps for 20 s, wakes and delivers what it recorded meanwhile", profile: .v1_4(serial: "TT14-001401"), configuration: config(mtu: 23, jitter: 3), seed: 1401, duration: .seconds(45)) { pair, start in
            pair.scheduleHits(count: 10, every: .milliseconds(500), from: start.advanced(by: .seconds(1)))
            pair.schedule(.battery(BatteryStatus(millivolts: 3610, percent: 18, isCharging: false)), at: start.advanced(by: .seconds(7)))
            pair.schedule(.sleep(.lowBattery, wakeAfterSeconds: 20), at: start.advanced(by: .seconds(8)))
            pair.scheduleHits(count: 5, every: .seconds(2), from: start.advanced(by: .seconds(12)))
        },
    ]

    private static func config(mtu: Int, jitter milliseconds: Int64, toGatewayMs: Int64 = 15, toDeviceMs: Int64 = 15, deviceToGateway: ChannelFaults = .none, gatewayToDevice: ChannelFaults = .none, desired: DeviceConfig? = nil) -> LinkPair.Configuration {
        var configuration = LinkPair.Configuration()
        configuration.mtu = mtu
        configuration.jitter = .milliseconds(milliseconds)
        configuration.deviceToGatewayLatency = .milliseconds(toGatewayMs)
        configuration.gatewayToDeviceLatency = .milliseconds(toDeviceMs)
        configuration.deviceToGateway = deviceToGateway
        configuration.gatewayToDevice = gatewayToDevice
        configuration.desiredConfig = desired
        return configuration
    }
}
