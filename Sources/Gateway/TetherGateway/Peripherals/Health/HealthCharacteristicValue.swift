import HealthProfiles
import TetherPrimitives

/// One value a health device sent: a notification or indication of one characteristic, as it arrived. The facts
/// the health lanes start from; nothing is decoded yet, so a parser fix can decode the same bytes again.
public struct HealthCharacteristicValue: Hashable, Sendable {
    /// The device's address (its identity address once bonded).
    public var address: String
    /// The gateway's connection number: values of one connection arrive in order per characteristic.
    public var link: UInt64
    public var service: HealthService
    /// The characteristic's 16-bit assigned number (0x2A35, ...).
    public var characteristic: UInt16
    public var bytes: [UInt8]
    /// The gateway's clock when the value arrived (the time of receipt a reading without a time of its own gets).
    public var receivedAt: Timestamp

    public init(address: String, link: UInt64, service: HealthService, characteristic: UInt16, bytes: [UInt8], receivedAt: Timestamp) {
        self.address = address
        self.link = link
        self.service = service
        self.characteristic = characteristic
        self.bytes = bytes
        self.receivedAt = receivedAt
    }
}

/// Where a health session hands what it received: the lanes (decode, store, live watchers). The gateway serves
/// health devices only when it has one (`GatewayConfiguration.health`); without it they stay unsupported, so that
/// no reading is received and dropped.
public protocol HealthValueSink: Sendable {
    /// A connection is set up and, before any value of it arrives, what the session read of the device's clock
    /// (Current Time and Local Time Information, when the device offers them), for deriving its readings' times.
    func linkStarted(address: String, link: UInt64, clock: DeviceClockFacts) async
    /// The gateway wrote the device's clock (the time-write policy): values received from `at` on are timed with
    /// `clock`, those received before it with what `linkStarted` said (docs/design/health.md, "The time-write rule").
    func clockChanged(address: String, link: UInt64, clock: DeviceClockFacts, at: Timestamp) async
    /// A value arrived. Called in arrival order per characteristic and connection.
    func received(_ value: HealthCharacteristicValue) async
    /// The connection the values came on ended, and its last value was handed over (`received` returned for it).
    func linkEnded(address: String, link: UInt64) async
    /// The cold lane, when this sink has one (HealthRecordSink.swift; default none): a device's RACP records then go
    /// there, not to `received`.
    var records: (any HealthRecordSink)? { get }
}
