import GRDB
import LinkProtocol

/// A row of `timeAnchor`: one time-sync anchor of one boot (§9.2, §9.3).
public struct TimeAnchorRecord: Codable, Hashable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "timeAnchor"

    public var id: Int64?
    public var deviceId: Int64
    public var bootCounter: UInt16
    public var deviceMicroseconds: Int64
    public var gatewayNanoseconds: Int64
    public var uncertaintyNanoseconds: Int64
    public var roundTripNanoseconds: Int64

    public init(id: Int64? = nil, deviceId: Int64, anchor: TimeAnchor) {
        self.id = id
        self.deviceId = deviceId
        self.bootCounter = anchor.bootCounter
        self.deviceMicroseconds = anchor.deviceMicroseconds
        self.gatewayNanoseconds = anchor.gatewayNanoseconds
        self.uncertaintyNanoseconds = anchor.uncertaintyNanoseconds
        self.roundTripNanoseconds = anchor.roundTripNanoseconds
    }

    public var anchor: TimeAnchor {
        TimeAnchor(
            bootCounter: bootCounter, deviceMicroseconds: deviceMicroseconds, gatewayNanoseconds: gatewayNanoseconds,
            uncertaintyNanoseconds: uncertaintyNanoseconds, roundTripNanoseconds: roundTripNanoseconds)
    }

    public enum Columns {
        public static let id = Column(CodingKeys.id)
        public static let deviceId = Column(CodingKeys.deviceId)
        public static let bootCounter = Column(CodingKeys.bootCounter)
        public static let deviceMicroseconds = Column(CodingKeys.deviceMicroseconds)
        public static let gatewayNanoseconds = Column(CodingKeys.gatewayNanoseconds)
        public static let uncertaintyNanoseconds = Column(CodingKeys.uncertaintyNanoseconds)
        public static let roundTripNanoseconds = Column(CodingKeys.roundTripNanoseconds)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
