import LinkProtocol
import Logging
import Testing
import TetherGateway
@testable import TetherDaemon
import TetherSettings

/// tetherd's settings traffic at debug level (SET_CONFIG and CONFIG_DATA with versions and frame numbers): with the
/// peripheral's log, a run whose stored reported version is not the device's shows which side lost the report.
struct SettingsLogTests {
    static let config = DeviceConfig(version: 2, settings: DeviceSettings(sensitivity: 8))

    @Test func everySettingsFactIsOneDebugLineWithItsVersion() {
        let (logger, lines) = DaemonLogHandlerTests().logger(journald: false, level: .debug)
        let address = "C0:54:45:00:00:01"
        let events: [GatewayTrace] = [
            .settings(address: address, .setConfigSent(Self.config, sequence: SequenceNumber(3), attempt: 2)),
            .settings(address: address, .configDataReceived(Self.config, sequence: SequenceNumber(5))),
            .settings(address: address, .configDataRepeated(Self.config, sequence: SequenceNumber(5))),
            .settingsStored(address: address, batch: 9, Self.config),
            .wrote(address: address, [0x54]),
        ]
        for event in events { TetherDaemon.logSettings(event, to: logger) }
        #expect(lines.all == [
            "DEBUG tetherd.test: SET_CONFIG sent address=\(address) attempt=2 sequence=3 version=2\n",
            "DEBUG tetherd.test: CONFIG_DATA received address=\(address) sequence=5 version=2\n",
            "DEBUG tetherd.test: CONFIG_DATA repeated, not stored again address=\(address) sequence=5 version=2\n",
            "DEBUG tetherd.test: CONFIG_DATA stored address=\(address) batch=9 version=2\n",
        ])
    }

    @Test func atInfoLevelNothingIsLogged() {
        let (logger, lines) = DaemonLogHandlerTests().logger(journald: false, level: .info)
        TetherDaemon.logSettings(.settingsStored(address: "C0:54:45:00:00:01", batch: 1, Self.config), to: logger)
        #expect(lines.all.isEmpty)
    }
}
