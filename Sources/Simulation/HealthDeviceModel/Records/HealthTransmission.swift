/// How a value leaves the device: an ATT Handle Value Notification or Indication (Core v5.3 Vol 3 Part F §3.4.7).
/// An indication waits for the client's Confirmation before the next one (§3.4.7.2: "only one indication may be
/// sent at a time"); BlueZ confirms on its own and hands both kinds to D-Bus clients the same way.
public enum Delivery: String, Hashable, Sendable {
    case notify
    case indicate
}

/// One value for one characteristic.
public struct HealthTransmission: Hashable, Sendable {
    public let characteristic: UInt16
    public let value: [UInt8]
    public let delivery: Delivery

    public init(characteristic: UInt16, value: [UInt8], delivery: Delivery) {
        self.characteristic = characteristic
        self.value = value
        self.delivery = delivery
    }
}
