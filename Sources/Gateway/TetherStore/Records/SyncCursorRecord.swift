import GRDB

/// A row of `syncCursor`: how far the gateway has read a backend feed (e.g. desired-settings changes), so that a
/// restart resumes where it stopped. The value is opaque to the store.
public struct SyncCursorRecord: Codable, Hashable, Sendable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "syncCursor"

    public var name: String
    public var value: String
    public var updatedAt: Int64

    public init(name: String, value: String, updatedAt: Int64) {
        self.name = name
        self.value = value
        self.updatedAt = updatedAt
    }

    public enum Columns {
        public static let name = Column(CodingKeys.name)
        public static let value = Column(CodingKeys.value)
        public static let updatedAt = Column(CodingKeys.updatedAt)
    }
}
