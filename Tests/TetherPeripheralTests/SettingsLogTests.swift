import TetherDeviceModel
import Foundation
import LinkProtocol
import Testing

@testable import TetherPeripheral
import TetherSettings

/// The peripheral's log of settings traffic (§7.11), one JSON line per fact with the version and frame number: the
/// device's half of the record that explains a reported version the gateway did not store.
struct PeripheralSettingsLogTests {
    @Test func everySettingsFactIsALineWithItsVersionAndFrame() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("peripheral-settings-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: url) }
        let log = try EventLog(url: url)
        let config = DeviceConfig(version: 2, settings: DeviceSettings(sensitivity: 8))
        log.settings(.setConfigApplied(config, sequence: SequenceNumber(4)))
        log.settings(.setConfigRefused(version: 3, sequence: SequenceNumber(6), key: 2))
        log.settings(.reportSent(config, sequence: SequenceNumber(7), retransmission: true))
        log.settings(.reportAcknowledged(version: 2, sequence: SequenceNumber(7)))
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(lines.count == 4)
        guard lines.count == 4 else { return }
        #expect(lines.map { $0["fact"] as? String } == ["set-config-applied", "set-config-refused", "config-data-sent", "config-data-acked"])
        #expect(lines.map { $0["version"] as? Int } == [2, 3, 2, 2])
        #expect(lines.map { $0["sequence"] as? Int } == [4, 6, 7, 7])
        #expect(lines[1]["key"] as? Int == 2)
        #expect(lines[2]["retransmission"] as? Bool == true)
    }
}
