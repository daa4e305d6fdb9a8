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
