import Foundation
import LinkProtocol

/// What the stand-in central does in the real-BlueZ VM: find one Tether device, pair with its passkey, and keep
/// reconnecting until it has stored `expectedHits` hits, alternating the subscription method per connection.
public struct CentralConfiguration: Sendable {
    public var adapter = "/org/bluez/hci1"
    /// Link protocol §2: the service a Tether device advertises.
    public var serviceUUID = "54455448-0001-4c1e-8e5a-7a3d2f1b0c00"
    public var rxUUID = "54455448-0002-4c1e-8e5a-7a3d2f1b0c00"
    public var txUUID = "54455448-0003-4c1e-8e5a-7a3d2f1b0c00"
    /// The passkey the technician types (nil: the device pairs without one, or is not paired at all).
    public var passkey: UInt32?
    public var databasePath: String
    public var expectedHits: Int
    /// Settings the gateway wants on the device (§7.11): sent with SET_CONFIG once the device reported its own.
    public var desiredConfig = DeviceConfig(
        version: 7, settings: DeviceSettings(sensitivity: 8, ledBrightness: 25, hapticFeedback: false, sleepTimeoutSeconds: 120, dailyLimit: 40))
    /// The whole run's bound.
    public var deadline: Duration = .seconds(200)
    /// Where the summary JSON goes.
    public var summaryPath: String

    public init(databasePath: String, expectedHits: Int, summaryPath: String) {
        self.databasePath = databasePath
        self.expectedHits = expectedHits
        self.summaryPath = summaryPath
    }
}
