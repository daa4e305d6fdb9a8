import DBus
import TetherControlClient
import Testing

@testable import TetherCLI

/// `tether status` says why pairing cannot work when BlueZ refused tetherd's pairing agent (`agent_error`).
struct StatusRenderingTests {
    static func status(_ extra: [String: DBusValue]) -> GatewayRecord {
        GatewayRecord(["bluez_available": .bool(true), "adapter": .string("hci0"), "scanning": .bool(false)].merging(extra) { $1 })
    }

    @Test func aRefusedPairingAgentIsShownOnTheBluezLine() {
        let refused = StatusCommand.render(Self.status(["agent_error": .string("BlueZ refused the pairing agent: AlreadyExists")]))
        #expect(refused.contains("available (hci0), pairing impossible: BlueZ refused the pairing agent: AlreadyExists, scanning"))
        let fine = StatusCommand.render(Self.status([:]))
        #expect(fine.contains("available (hci0), scanning") && !fine.contains("pairing impossible"))
    }
}

/// `tether health devices` shows when tetherd set a device's clock on this link (ListHealthDevices' clock_written_at).
struct HealthDevicesRenderingTests {
    @Test func theClockWriteHasItsColumn() throws {
        let written = GatewayRecord([
            "address": .string("C0:54:45:00:10:01"), "connected": .bool(true),
            "clock_written_at": .int64(1_795_999_999_000_000_000),  // 2026-11-30 00:53:19Z
        ])
        let unwritten = GatewayRecord(["address": .string("C0:54:45:00:10:02"), "connected": .bool(false)])
        let lines = HealthTables.devices([written, unwritten]).split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        let header = try #require(lines.first)
        let column = try #require(header.range(of: "CLOCK SET")).lowerBound.utf16Offset(in: header)
        func cell(_ line: String) -> Substring { line.dropFirst(column).prefix { $0 != " " } }
        #expect(cell(lines[1]) == "2026-11-30")
        #expect(lines[1].contains("2026-11-30 00:53:19Z"))
        #expect(cell(lines[2]) == "-")
    }
}
